"""Resold offers (tracker.market.aggregated): labelled `via` an aggregator with their upstream, and counted
as the user chooses — every listing, direct offers only, or each machine once (its direct price preferred)
— the same way in the market, the offer list (SQL) and rankings (numpy)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import numpy as np
import pytest

from providers.adapters.primeintellect import PrimeIntellect
from providers.adapters.shadeform import Shadeform
from providers.fetching import labelled_aggregated
from tests.factories.offers import batch, do_ingest, offer
from tracker.market import aggregated
from tracker.market.live import fresh_mask
from tracker.market.offers import OfferFilters, current_offers, offer_row
from tracker.market.rank import RankFilters, filter_mask
from tracker.market.service import market_snapshot
from tracker.storage.engine import session_scope

NOW = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)


def _market(engine, settings, clock):
    """Lambda lists its H100 directly at $3.00; Shadeform resells it at $3.50 and Prime Intellect at $3.20.
    Hyperstack's H100 reaches us only through resellers: Shadeform at $2.80, Prime Intellect at $2.90."""
    clock.now = NOW
    do_ingest(engine, settings, clock, batch(offer("h100", "3.00")), provider="lambdalabs")
    shade = batch(offer("lam", "3.50", upstream="lambdalabs"), offer("hyp", "2.80", upstream="hyperstack"))
    do_ingest(engine, settings, clock, labelled_aggregated(Shadeform, shade), provider="shadeform")
    prime = batch(
        offer("lam", "3.20", upstream="lambdalabs"),
        offer("hyp", "2.90", upstream="hyperstack"),
        offer("own", "2.50", upstream=None),
    )  # fmt: skip  (dc_*: Prime Intellect's own machine)
    do_ingest(engine, settings, clock, labelled_aggregated(PrimeIntellect, prime), provider="primeintellect")


def _prices(rows) -> list[tuple[str, Decimal]]:
    return sorted((r["provider"], Decimal(str(r["price_per_gpu_hour"]))) for r in rows)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "include",
            [
                ("lambdalabs", 3),
                ("primeintellect", 2.5),
                ("primeintellect", 2.9),
                ("primeintellect", 3.2),
                ("shadeform", 2.8),
                ("shadeform", 3.5),
            ],
        ),
        ("exclude", [("lambdalabs", 3), ("primeintellect", 2.5)]),
        # Lambda's own price wins over both resales of it; Hyperstack's cheapest resale stands for it.
        ("dedupe", [("lambdalabs", 3), ("primeintellect", 2.5), ("shadeform", 2.8)]),
    ],
)
def test_offer_list_sql(engine, settings, clock, mode, expected):
    _market(engine, settings, clock)
    with session_scope(engine) as s:
        rows = [offer_row(o) for o in current_offers(s, OfferFilters(aggregated=mode))]
    assert _prices(rows) == [(p, Decimal(str(v))) for p, v in expected]
    labelled = {(r["provider"], r["via"], r["upstream"]) for r in rows if r["via"]}
    assert all(via == provider and upstream in {"lambdalabs", "hyperstack"} for provider, via, upstream in labelled)


@pytest.mark.parametrize(
    ("mode", "offers", "resold", "low"), [("include", 6, 4, "2.5"), ("exclude", 2, 0, "2.5"), ("dedupe", 3, 1, "2.5")]
)
def test_market_counts_a_machine_once_when_asked(engine, settings, clock, mode, offers, resold, low):
    _market(engine, settings, clock)
    with session_scope(engine) as s:
        (card,) = market_snapshot(engine, s, settings, NOW, aggregated=mode)["cards"]
    assert (card["offers"], card["aggregated_offers"], card["min"]) == (offers, resold, Decimal(low))


def test_ranking_filter_agrees_with_the_offer_list(engine, settings, clock, live):
    _market(engine, settings, clock)
    with session_scope(engine) as s:
        _, table = live.frame(engine, s)
        fresh = fresh_mask(table, NOW, settings)
        for mode in aggregated.MODES:
            ranked = set(table["id"][filter_mask(table, fresh, RankFilters(aggregated=mode))].tolist())
            listed = {o.id for o in current_offers(s, OfferFilters(aggregated=mode))}
            assert ranked == listed, mode
        # Relative to what the request selected: with Lambda filtered out, a resale of its H100 stands in.
        only_resellers = RankFilters(providers=["shadeform", "primeintellect"], aggregated="dedupe")
        kept = table["provider"][filter_mask(table, fresh, only_resellers)]
        prices = sorted(table["price_per_gpu_hour_f"][filter_mask(table, fresh, only_resellers)].tolist())
    assert sorted(kept.tolist()) == ["primeintellect", "primeintellect", "shadeform"]
    assert prices == [2.5, 2.8, 3.2]  # Lambda's H100 now counts at its cheapest resale


def test_machines_differ_by_count_pricing_and_term():
    # Same upstream and card, but 1 vs 8 GPUs, spot vs on-demand, 1y vs 3y: five machines, none dropped.
    n = 5
    keep = aggregated.dedupe(
        np.ones(n, dtype=bool),
        provider=["shadeform"] * n,
        via=["shadeform"] * n,
        upstream=["lambdalabs"] * n,
        gpu_id=["H100-SXM-80GB"] * n,
        gpu_count=[1, 8, 1, 1, 1],
        pricing=["on_demand", "on_demand", "spot", "reserved", "reserved"],
        reserved_term=[None, None, None, "1y", "3y"],
        price_per_gpu_hour=[3, 3, 1, 2, 2],
        ids=list(range(n)),
    )
    assert keep.all()


def test_unknown_choice_is_refused():
    # The schema's own message (tracker.market.filters), naming the field and the choices.
    with pytest.raises(ValueError, match=r"aggregated\n.*'include', 'exclude' or 'dedupe'"):
        OfferFilters(aggregated="sometimes")
    with pytest.raises(ValueError, match="aggregated"):
        RankFilters(aggregated="")


def test_labels_reach_offers_stored_before_them(engine, settings, clock):
    # An offer ingested before its adapter named the upstream gets `via` on the next, unchanged, scrape:
    # the labels are filtered on, so ingest keeps them current like the quality attributes.
    clock.now = NOW
    do_ingest(engine, settings, clock, batch(offer("hyp", "2.80")), provider="shadeform")
    resold = labelled_aggregated(Shadeform, batch(offer("hyp", "2.80", upstream="hyperstack")))
    do_ingest(engine, settings, clock, resold, provider="shadeform")
    with session_scope(engine) as s:
        (row,) = [offer_row(o) for o in current_offers(s, OfferFilters())]
    assert (row["via"], row["upstream"]) == ("shadeform", "hyperstack")


@pytest.mark.parametrize(
    ("mode", "offers", "low", "median"),
    [("include", 6, "2.5", "2.9"), ("exclude", 2, "2.5", "2.5"), ("dedupe", 3, "2.5", "2.8")],
)
def test_history_counts_resales_as_the_market_does(engine, settings, clock, mode, offers, low, median):
    """The history's bucket holds the offers the snapshot counts at that hour, under each mode."""
    from datetime import timedelta

    from tracker.market.service import market_history

    _market(engine, settings, clock)
    now = NOW + timedelta(minutes=30)
    with session_scope(engine) as s:
        (bucket,) = market_history(
            s,
            settings,
            now,
            gpu_ids=["H100-SXM-80GB"],
            pricing="on_demand",
            interval="1h",
            start=NOW,
            end=now,
            aggregated=mode,
        )
        (card,) = market_snapshot(engine, s, settings, now, aggregated=mode)["cards"]
    assert (bucket["offers"], bucket["min"], bucket["median"]) == (offers, Decimal(low), Decimal(median))
    assert (card["offers"], card["min"], card["median"]) == (bucket["offers"], bucket["min"], bucket["median"])


def test_history_dedupes_bucket_by_bucket(engine, settings, clock):
    """Lambda delists its own H100 an hour in: from then on the cheaper resale of it stands in."""
    from datetime import timedelta

    from tracker.market.service import market_history

    _market(engine, settings, clock)
    clock.advance(hours=1)
    do_ingest(engine, settings, clock, batch(offer("other", "9.00", gpu="A100-SXM4-80GB")), provider="lambdalabs")
    now = NOW + timedelta(hours=1, minutes=30)
    with session_scope(engine) as s:
        rows = market_history(
            s,
            settings,
            now,
            gpu_ids=["H100-SXM-80GB"],
            pricing="on_demand",
            interval="1h",
            start=NOW,
            end=now,
            aggregated="dedupe",
        )
    first, second = rows
    assert (first["offers"], first["max"]) == (3, Decimal("3"))  # Lambda's own $3.00
    assert (second["offers"], second["max"]) == (3, Decimal("3.2"))  # Prime Intellect's $3.20 resale of it


def test_history_api_and_cli_take_aggregated(engine, settings, clock, cli):
    from fastapi.testclient import TestClient

    from api.app import create_app

    _market(engine, settings, clock)
    clock.advance(minutes=30)
    with TestClient(create_app(settings, engine, clock=clock), raise_server_exceptions=False) as c:
        params = {"gpu": "H100 SXM", "interval": "1h", "start": NOW.isoformat(), "aggregated": "exclude"}
        (bucket,) = c.get("/v1/market/history", params=params).json()["buckets"]
        assert bucket["offers"] == 2
        bad = c.get("/v1/market/history", params={**params, "aggregated": "twice"})
        assert bad.status_code == 422 and "aggregated" in bad.text
    wrong = cli("history", "H100 SXM", "--aggregated", "twice")
    assert wrong.exit_code != 0 and "--aggregated" in wrong.output and len(wrong.output.strip().splitlines()) == 1
