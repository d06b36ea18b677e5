"""The region filter on both backends: exact or prefix, and `_` / `%` in a region are literal characters
(the SQL condition is a LIKE prefix; before it was escaped, "us_east" matched "usXeast-1" and "%" matched
every region), agreeing with the in-memory rule the ranking uses."""

from __future__ import annotations

from sqlalchemy import select

from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.market.filters import region_condition, region_matches
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer

REGIONS = ["us-texas", "usXeast-1", "us_east-1", "eu-ro-1", "100%-a"]
PROVIDER = "vastai"  # the factories' default: regions are read as "<country>-…" (tracker/catalog/regions.toml)


def _regions(engine, wanted: list[str]) -> list[str]:
    # The SQL condition itself: the schema's pattern keeps `%` out of API and CLI filters, but alert rules
    # saved before it, and any caller of the condition, reach the LIKE with whatever they hold.
    with session_scope(engine) as session:
        return sorted(session.scalars(select(Offer.region).where(region_condition(wanted))))


def test_region_prefix_is_literal(engine, settings):
    clock = FakeClock()
    do_ingest(engine, settings, clock, batch(*[offer(f"o{i}", f"1.{i}0", region=r) for i, r in enumerate(REGIONS)]))
    assert _regions(engine, ["us"]) == ["us-texas", "us_east-1"]  # both placed in the US (a country now)
    assert _regions(engine, ["us_east"]) == ["us_east-1"]  # not usXeast-1: `_` is no wildcard
    assert _regions(engine, ["%"]) == []  # not every region
    assert _regions(engine, ["100%"]) == ["100%-a"]
    for wanted in (["us"], ["us_east"], ["%"], ["100%"]):
        assert _regions(engine, wanted) == sorted(r for r in REGIONS if region_matches(PROVIDER, r, wanted))
