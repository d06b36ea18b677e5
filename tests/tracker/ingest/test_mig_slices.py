"""MIG slices are priced as what they are: a 1g.10gb A100 slice is stored as 1/7 of its card (gpu_count
0.143) with its own 10 GB, shown as the slice, ranked only for jobs that fit in it, and unchanged on the
next run; an offer of several slices, or a slice the catalog cannot place, is set aside with the reason."""

from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy import select

from tests.factories.offers import batch, do_ingest, offer
from tracker.estimate import make_job, prepare
from tracker.market.live import LIVE
from tracker.market.offers import OfferFilters, current_offers, offer_row
from tracker.market.rank import RankFilters, RankOptions
from tracker.market.service import rank_offers
from tracker.money import to_money
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer

A100 = "A100-SXM-80GB"
SLICE = "NVIDIA A100-SXM4-80GB MIG 1g.10gb"


@pytest.fixture(autouse=True)
def _fresh_cache():
    LIVE.clear()
    yield
    LIVE.clear()


def _ingest(engine, settings, clock, *extra):
    result = batch(
        offer("mig", "0.50", gpu=SLICE, count=1, gpu_memory_gb=Decimal("9.5")),
        offer("whole", "2.00", gpu="A100 SXM4 80GB"),
        *extra,
    )
    return do_ingest(engine, settings, clock, result, provider="runpod")


def test_a_slice_is_its_share_of_the_card_with_its_own_memory(engine, settings, clock):
    report = _ingest(engine, settings, clock)
    assert report.status == "ok" and report.offers_valid == 2 and not report.unknown_names, report
    with session_scope(engine) as s:
        mig = s.scalars(select(Offer).where(Offer.offer_key == "mig")).one()
        assert (mig.gpu_id, mig.gpu_count, mig.gpu_memory_gb) == (A100, Decimal("0.143"), Decimal(10))
        assert (mig.attributes["mig_profile"], mig.attributes["mig_share"]) == ("1g.10gb", "1/7")
        assert mig.price_per_hour == Decimal("0.5")
        assert mig.price_per_gpu_hour == to_money(Decimal("0.50") / Decimal("0.143"))  # a whole card's worth
        rows = {r["offer_key"]: r for r in map(offer_row, current_offers(s, OfferFilters()))}
    assert rows["mig"]["slice"] == "1g.10gb" and rows["whole"]["slice"] is None
    clock.advance(minutes=10)
    again = _ingest(engine, settings, clock)  # the same listing: nothing changes
    assert (again.price_rows, again.offers_new, again.availability_rows) == (0, 0, 0)


def test_a_slice_is_ranked_only_for_jobs_that_fit_it(engine, settings, clock):
    _ingest(engine, settings, clock)
    now = clock()
    with session_scope(engine) as s:
        small = prepare(make_job(model="llama-3.2-1b", method="qlora", tokens="1M"))
        big = prepare(make_job(model="llama-3.1-8b", method="qlora", tokens="1M"))  # ~13.5 GB: not in 10 GB
        fits_small = rank_offers(engine, s, settings, now, small, RankFilters(gpu_ids=[A100]), RankOptions())
        fits_big = rank_offers(engine, s, settings, now, big, RankFilters(gpu_ids=[A100]), RankOptions())
        shown = rank_offers(engine, s, settings, now, big, RankFilters(gpu_ids=[A100]), RankOptions(include_unfit=True))
    small_rows = {r["offer_key"]: r for r in fits_small["rows"]}
    assert small_rows["mig"]["slice"] == "1g.10gb" and small_rows["mig"]["gpus"] == pytest.approx(0.143)
    assert small_rows["mig"]["fits"] and small_rows["mig"]["cost_per_run"] is not None
    assert [r["offer_key"] for r in fits_big["rows"] if r["fits"]] == ["whole"]
    (unfit,) = [r for r in shown["rows"] if r["offer_key"] == "mig"]
    assert not unfit["fits"] and "10 GB" in unfit["reason"]


def test_several_slices_and_unplaceable_slices_are_set_aside(engine, settings, clock):
    report = _ingest(
        engine, settings, clock, offer("two", "1.00", gpu=SLICE, count=2), offer("l40s", "0.40", gpu="L40S MIG 1g.10gb")
    )
    assert report.status == "ok" and report.offers_valid == 2
    reasons = " | ".join(report.invalid)
    assert "two: 2 MIG slices in one offer" in reasons and "l40s: MIG slice 'L40S MIG 1g.10gb' not placed" in reasons
