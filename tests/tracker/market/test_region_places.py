"""`--region eu` finds every offer in Europe, whatever the provider calls the region (fr-par-2, fin-02,
gra11, it-fr2, eu-ro-1, de-bavaria …), the same in SQL (offers, availability, alerts) and over the live
table (rank), on the demo data of every provider."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import select

from providers.contract import PriceKind
from tracker.catalog.locations import get_locations
from tracker.market.filters import OfferFilters
from tracker.market.live import LiveOffers
from tracker.market.offers import current_offers
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, RegionLocation


@pytest.fixture
def demo(cli, engine):
    result = cli("scrape", "--demo")
    assert result.exit_code == 0, result.output
    return engine


def _in(area_or_country: str, engine) -> set[int]:
    table = get_locations()
    with session_scope(engine) as s:
        rows = s.execute(select(Offer.id, Offer.provider, Offer.region).where(Offer.delisted_at.is_(None))).all()
    return {i for i, p, r in rows if (place := table.locate(p, r)) is not None and area_or_country in place.words}


@pytest.mark.parametrize("wanted", ["eu", "de", "apac", "us"])
def test_a_place_finds_every_offer_there_in_sql_and_in_the_live_table(demo, wanted: str) -> None:
    expected = _in(wanted, demo)
    assert len(expected) > 3
    with session_scope(demo) as s:
        # Every price kind: this is the region rule alone (a rented or floor price is in its region too).
        wanted_filter = OfferFilters(regions=[wanted], price_kinds=list(PriceKind))
        found = {o.id for o in current_offers(s, wanted_filter)}
        table = LiveOffers().frame(demo, s)[1]
    mask = wanted_filter.mask(table, np.ones(len(table["id"]), dtype=bool))
    assert found == expected
    assert set(table["id"][mask].tolist()) == expected


def test_eu_finds_the_regions_a_string_prefix_missed(demo) -> None:
    with session_scope(demo) as s:
        regions = {(o.provider, o.region) for o in current_offers(s, OfferFilters(regions=["eu"]))}
    for pair in [("scaleway", "fr-par-2"), ("verda", "fin-02"), ("ovhcloud", "gra11"), ("seeweb", "it-fr2")]:
        assert pair in regions
    assert not any(r.startswith("us-") for _, r in regions)


def test_ingest_keeps_every_region_placed(demo) -> None:
    with session_scope(demo) as s:
        stored = {(r.provider, r.region): r for r in s.scalars(select(RegionLocation))}
        pairs = set(s.execute(select(Offer.provider, Offer.region).where(Offer.region != "")).all())
    assert pairs <= set(stored)
    unplaced = sorted(f"{p}:{r}" for (p, r), row in stored.items() if not row.located)
    assert unplaced == [], unplaced
