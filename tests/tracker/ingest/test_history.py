"""Change-only history semantics on SQLite and Postgres: change, no change, delist, relist, past instants."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from providers.adapters.vastai import VastAi
from tests.factories.offers import batch, do_ingest, offer
from tracker.market.offers import price_at, snapshot_at
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferPrice, ScrapeRun, UnresolvedGpuName


def count(engine, model) -> int:
    with session_scope(engine) as s:
        return s.execute(select(func.count()).select_from(model)).scalar_one()


def offer_row(s, key: str) -> Offer:
    row = s.scalar(select(Offer).where(Offer.offer_key == key))
    assert row is not None, f"no offer {key!r} stored"
    return row


def price_of(s, offer_id: int, at) -> Decimal:
    row = price_at(s, offer_id, at)
    assert row is not None, f"offer {offer_id} had no price at {at}"
    return row.price_per_hour


def test_new_offers_write_one_price_row_each(engine, settings, clock):
    report = do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "16.00", count=8)))
    assert (report.status, report.offers_new, report.price_rows) == ("ok", 2, 2)
    with session_scope(engine) as s:
        b = offer_row(s, "b")
        assert b.price_per_gpu_hour == Decimal("2.000000")
        assert b.first_seen == clock() and b.first_seen.tzinfo is not None


def test_unchanged_batch_only_moves_last_seen(engine, settings, clock):
    do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "3.00")))
    first = clock()
    later = clock.advance(minutes=10)
    report = do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "3.00")))
    assert (report.price_rows, report.offers_new, report.offers_closed) == (0, 0, 0)
    assert count(engine, OfferPrice) == 2
    with session_scope(engine) as s:
        a = offer_row(s, "a")
        assert (a.first_seen, a.last_seen) == (first, later)


def test_price_change_closes_old_row_and_past_instant_keeps_old_price(engine, settings, clock):
    do_ingest(engine, settings, clock, batch(offer("a", "2.00")))
    t0 = clock()
    clock.advance(hours=1)
    t1 = clock()
    report = do_ingest(engine, settings, clock, batch(offer("a", "1.80")))
    assert report.price_rows == 1
    with session_scope(engine) as s:
        a = offer_row(s, "a")
        assert a.price_per_hour == Decimal("1.800000")
        rows = s.scalars(select(OfferPrice).where(OfferPrice.offer_id == a.id).order_by(OfferPrice.valid_from)).all()
        assert [(r.price_per_hour, r.valid_from, r.valid_to) for r in rows] == [
            (Decimal("2.000000"), t0, t1),
            (Decimal("1.800000"), t1, None),
        ]
        assert price_of(s, a.id, t0) == Decimal("2.000000")
        assert price_of(s, a.id, t1 - (t1 - t0) / 2) == Decimal("2.000000")
        assert price_of(s, a.id, t1) == Decimal("1.800000")
        assert price_at(s, a.id, t0.replace(year=2025)) is None


def test_delist_and_relist(engine, settings, clock):
    do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "3.00")))
    t_delist = clock.advance(hours=1)
    report = do_ingest(engine, settings, clock, batch(offer("a", "2.00")))
    assert (report.offers_closed, report.price_rows) == (1, 0)
    with session_scope(engine) as s:
        b = offer_row(s, "b")
        assert b.delisted_at == t_delist
        assert price_at(s, b.id, t_delist) is None  # not listed any more
        assert [o.offer_key for o, _ in snapshot_at(s, t_delist)] == ["a"]
    t_back = clock.advance(hours=1)
    report = do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "3.00")))
    assert (report.offers_reopened, report.price_rows, report.offers_new) == (1, 1, 0)
    with session_scope(engine) as s:
        b = offer_row(s, "b")
        assert b.delisted_at is None
        assert price_of(s, b.id, t_back) == Decimal("3.000000")
        assert price_at(s, b.id, t_delist) is None
        # Exactly one open row per offer.
        open_rows = s.scalar(select(func.count()).where(OfferPrice.offer_id == b.id, OfferPrice.valid_to.is_(None)))
        assert open_rows == 1


def test_invalid_offers_and_unknown_names_are_set_aside(engine, settings, clock):
    report = do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("ok", "2.00"),
            offer("free", "0"),
            offer("zero", "2.00", count=0),
            offer("absurd", "5000.00"),
            offer("dup", "2.00"),
            offer("dup", "2.50"),
            offer("mystery", "1.00", gpu="Frobnicator 9000"),
        ),
    )
    assert report.offers_valid == 2
    assert report.unknown_names == {"Frobnicator 9000": 1}
    assert len(report.invalid) == 4
    assert count(engine, Offer) == 2
    with session_scope(engine) as s:
        u = s.scalar(select(UnresolvedGpuName))
        assert u is not None
        assert (u.provider, u.raw_name, u.times_seen) == ("vastai", "Frobnicator 9000", 1)


def test_collapsed_batch_is_quarantined_and_keeps_prices(engine, settings, clock):
    offers = [offer(f"k{i}", f"{2 + i / 100:.2f}") for i in range(30)]
    do_ingest(engine, settings, clock, batch(*offers))
    clock.advance(hours=1)
    report = do_ingest(engine, settings, clock, batch(offer("k0", "0.50")))
    assert report.status == "quarantined" and "collapsed" in report.error
    with session_scope(engine) as s:
        assert s.scalar(select(func.count()).select_from(Offer).where(Offer.delisted_at.is_(None))) == 30
        assert s.scalar(select(Offer.price_per_hour).where(Offer.offer_key == "k0")) == Decimal("2.000000")
        run = s.scalar(select(ScrapeRun).order_by(ScrapeRun.id.desc()))
        assert run is not None
        assert run.status == "quarantined" and "collapsed" in (run.error or "")


def test_identical_prices_are_quarantined(engine, settings, clock):
    report = do_ingest(engine, settings, clock, batch(*[offer(f"k{i}", "1.00") for i in range(6)]))
    assert report.status == "quarantined" and "identical" in report.error
    assert count(engine, Offer) == 0


def _scrape(engine, settings, clock, cassette=None):
    job = ScrapeJob(VastAi, "replay", cassette) if cassette else ScrapeJob(VastAi)
    return asyncio.run(run_scrape([job], engine, settings, clock=clock))[0]


def test_vast_cassette_change_one_price_remove_one_offer(engine, settings, clock):
    from providers.cassette import Cassette, bundled_cassette
    from tests.factories.cassettes import mutated_cassette

    first = _scrape(engine, settings, clock, Cassette.load(bundled_cassette("vastai")))
    assert first.status == "ok" and first.price_rows == first.offers_valid > 0
    t_first = clock()

    def change(raw):
        offers = raw["interactions"][0]["response"]["json"]["offers"]
        offers[1]["dph_total"] = 1.4999  # H100 PCIe on-demand price changes
        removed = offers.pop(2)  # RTX 4090 (no min_bid → one offer) disappears
        assert removed["gpu_name"] == "RTX 4090"

    clock.advance(minutes=10)
    second = _scrape(engine, settings, clock, mutated_cassette(VastAi, change))
    assert (second.status, second.price_rows, second.offers_closed) == ("ok", 1, 1)
    with session_scope(engine) as s:
        h100 = offer_row(s, "21877001")
        assert h100.price_per_hour == Decimal("1.499900")
        assert price_of(s, h100.id, t_first) == Decimal("1.651400")


def test_failed_fetch_stores_nothing_and_records_reason(engine, settings, clock):
    from tests.factories.cassettes import mutated_cassette

    def break_it(raw):
        raw["interactions"][0]["response"] = {"status": 200, "headers": {}, "text": '{"offers": [{"id": 1'}

    report = _scrape(engine, settings, clock, mutated_cassette(VastAi, break_it))
    assert report.status == "failed" and "invalid JSON" in report.error
    assert count(engine, Offer) == 0
    with session_scope(engine) as s:
        run = s.scalar(select(ScrapeRun))
        assert run is not None
        assert run.status == "failed" and "invalid JSON" in run.error and run.finished_at is not None


@pytest.mark.parametrize("rerun", [1, 2])
def test_same_batch_is_idempotent(engine, settings, clock, rerun):
    result = batch(offer("a", "2.00"), offer("b", "3.00", gpu="A100 SXM4", gpu_memory_gb=Decimal("40")))
    do_ingest(engine, settings, clock, result)
    for _ in range(rerun):
        clock.advance(minutes=5)
        assert do_ingest(engine, settings, clock, result).price_rows == 0
    assert count(engine, OfferPrice) == 2


def test_open_form_factor_is_assumed_conservatively_and_recorded(engine, settings, clock):
    report = do_ingest(
        engine,
        settings,
        clock,
        batch(offer("v100", "0.50", gpu="Tesla V100 16GB"), offer("a100", "1.00", gpu="A100")),
    )
    assert report.assumed_names == {"Tesla V100 16GB": "V100-PCIE-16GB"}  # PCIe: the slower of the two
    assert report.unknown_names == {"A100": 1}  # memory open too: not guessed
    with session_scope(engine) as s:
        v100 = offer_row(s, "v100")
        assert v100.gpu_id == "V100-PCIE-16GB" and "slowest variant assumed" in v100.attributes["variant_assumed"]


def test_same_price_over_fewer_gpus_is_a_new_price_row(engine, settings, clock):
    """History is per GPU-hour: $16/h for 8 GPUs then for 4 GPUs is $2 then $4 per GPU-hour."""
    do_ingest(engine, settings, clock, batch(offer("a", "16.00", count=8)))
    t0 = clock()
    t1 = clock.advance(hours=1)
    report = do_ingest(engine, settings, clock, batch(offer("a", "16.00", count=4)))
    assert (report.status, report.price_rows) == ("ok", 1)
    with session_scope(engine) as s:
        a = offer_row(s, "a")
        rows = s.scalars(select(OfferPrice).where(OfferPrice.offer_id == a.id).order_by(OfferPrice.valid_from)).all()
        assert [(r.price_per_gpu_hour, r.valid_from, r.valid_to) for r in rows] == [
            (Decimal("2.000000"), t0, t1),
            (Decimal("4.000000"), t1, None),
        ]
