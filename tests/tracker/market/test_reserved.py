"""Reserved prices stay apart: a statistic per reservation term (never blended with on-demand or with
another term) and a ranking that leaves commitments out unless they are asked for."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from providers.contract import Pricing
from tests.factories.offers import batch, do_ingest, offer
from tracker.market.live import fresh_mask
from tracker.market.rank import RankFilters, filter_mask
from tracker.market.service import market_snapshot
from tracker.storage.engine import session_scope

NOW = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)


def _ingest(engine, settings, clock):
    clock.now = NOW
    offers = batch(
        offer("od", "4.00"),
        offer("y1", "3.00", pricing=Pricing.reserved, reserved_term="1y"),
        offer("y1b", "2.80", pricing=Pricing.reserved, reserved_term="1y"),
        offer("y3", "2.00", pricing=Pricing.reserved, reserved_term="3y"),
    )
    do_ingest(engine, settings, clock, offers, provider="aws")


def test_a_statistic_per_term(engine, settings, clock):
    _ingest(engine, settings, clock)
    with session_scope(engine) as s:
        cards = market_snapshot(engine, s, settings, NOW)["cards"]
    got = {(c["pricing"], c["reserved_term"]): (c["offers"], c["min"], c["max"]) for c in cards}
    assert got == {
        ("on_demand", None): (1, Decimal("4.000000"), Decimal("4.000000")),
        ("reserved", "1y"): (2, Decimal("2.800000"), Decimal("3.000000")),
        ("reserved", "3y"): (1, Decimal("2.000000"), Decimal("2.000000")),
    }


def test_ranking_leaves_commitments_out_unless_asked(engine, settings, clock, live):
    _ingest(engine, settings, clock)
    with session_scope(engine) as s:
        _, table = live.frame(engine, s)
        fresh = fresh_mask(table, NOW, settings)
        default = set(table["offer_key"][filter_mask(table, fresh, RankFilters())].tolist())
        asked = set(table["offer_key"][filter_mask(table, fresh, RankFilters(pricing=["reserved"]))].tolist())
    assert default == {"od"}  # the 3-year $2.00 is no on-demand price for the same run
    assert asked == {"y1", "y1b", "y3"}
