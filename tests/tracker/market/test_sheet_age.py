"""A rate sheet's own staleness (tracker.market.freshness.sheet_ages): past TRACKER_SHEET_MAX_AGE_DAYS since
the day its prices were read, `/v1/market`, the overview and the dashboard say so — while its offers stay
live (the file is re-read daily) and keep counting."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from providers.adapters.crusoe import CrusoeRates
from providers.adapters.reference import ReferenceRates
from providers.registry import reference_providers
from tests.factories.cassettes import replay
from tests.factories.offers import do_ingest
from tracker.market import freshness
from tracker.market.overview import market_overview
from tracker.market.service import market_snapshot
from tracker.storage.engine import session_scope

CRUSOE_READ = date(2026, 8, 19)  # providers/sheets/crusoe.toml as_of


def _at(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, 12, tzinfo=UTC)


def test_every_sheet_has_a_date():
    dates = freshness.sheet_dates()
    assert set(dates) == set(reference_providers())
    assert all(d > date(2026, 1, 1) for d in dates.values()), dates  # an unreadable as_of would be date.min
    assert dates["crusoe"] == CRUSOE_READ


def test_stale_only_past_the_limit(settings):
    limit = settings.sheet_max_age_days
    assert limit == 45  # the documented default
    on_the_day = freshness.sheet_ages(_at(CRUSOE_READ + timedelta(days=limit)), settings, ["crusoe"])["crusoe"]
    past = freshness.sheet_ages(_at(CRUSOE_READ + timedelta(days=limit + 1)), settings, ["crusoe"])["crusoe"]
    assert (on_the_day.age_days, on_the_day.stale) == (45, False)
    assert (past.age_days, past.stale) == (46, True)
    assert past.as_dict() == {"provider": "crusoe", "as_of": "2026-08-19", "age_days": 46, "stale": True}
    tighter = settings.model_copy(update={"sheet_max_age_days": 10})
    assert freshness.sheet_ages(_at(CRUSOE_READ + timedelta(days=11)), tighter, ["crusoe"])["crusoe"].stale
    assert freshness.signature(tighter) != freshness.signature(settings)  # cached answers follow the limit


def test_market_names_the_stale_sheets_it_counts(engine, settings, clock):
    now = _at(CRUSOE_READ + timedelta(days=60))  # crusoe (08-19) is 60 days old; reference (08-06) 73
    clock.now = now
    do_ingest(engine, settings, clock, replay(CrusoeRates), provider="crusoe")
    do_ingest(engine, settings, clock, replay(ReferenceRates), provider="reference")
    young = settings.model_copy(update={"sheet_max_age_days": 65})  # crusoe is young enough, reference not
    with session_scope(engine) as s:
        snap = market_snapshot(engine, s, young, now)
        overview = market_overview(engine, s, young, now)
        without = market_snapshot(engine, s, young, now, include_reference=False)
    ages = {a["provider"]: a for a in snap["sheets"]}
    assert ages["crusoe"]["stale"] is False and ages["reference"]["stale"] is True
    assert ages["reference"]["age_days"] == 73
    by_card = {(c["gpu"], c["pricing"]): c for c in snap["cards"]}
    assert by_card[("H100-SXM-80GB", "on_demand")]["stale_sheets"] == ["reference"]  # crusoe counts too, not stale
    assert by_card[("MI300X-192GB", "on_demand")]["stale_sheets"] == []  # only crusoe lists it
    assert by_card[("H100-SXM-80GB", "on_demand")]["offers"] == 2  # stale prices still count, labelled
    assert overview["sheets"] == snap["sheets"]
    assert {(c["gpu"], c["pricing"]): c["stale_sheets"] for c in overview["cards"]}[("H100-SXM-80GB", "on_demand")] == [
        "reference"
    ]
    assert without["sheets"] == [] and without["cards"] == []
