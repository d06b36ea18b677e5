"""A provider unobserved for far longer than its cadence is an outage: history draws a gap, not a line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.market.statistics import history
from tracker.storage.engine import session_scope

START = datetime(2026, 10, 1, tzinfo=UTC)


def _days(engine, settings, end):
    with session_scope(engine) as session:
        rows = history(
            session,
            gpu_ids=["H100-SXM-80GB"],
            pricing="on_demand",
            interval="1d",
            start=START,
            end=end,
            now=end,
            settings=settings,
        )
    return [r["bucket"].date().isoformat() for r in rows]


def test_a_silence_much_longer_than_the_cadence_is_a_gap(engine, settings):
    clock = FakeClock(START)
    for hours in [*range(0, 72, 6), *range(10 * 24, 13 * 24, 6)]:  # every 6 h, silent from day 3 to day 10
        clock.now = START + timedelta(hours=hours)
        do_ingest(engine, settings, clock, batch(offer("a", "2.00")))  # the same price throughout
    days = _days(engine, settings, START + timedelta(days=13))
    assert days == ["2026-10-01", "2026-10-02", "2026-10-03", "2026-10-11", "2026-10-12", "2026-10-13"]


def test_a_steady_slow_cadence_is_no_outage(engine, settings):
    clock = FakeClock(START)
    for step in range(6):  # every 3 days, as a seed or a slow sheet is read
        clock.now = START + timedelta(days=3 * step)
        do_ingest(engine, settings, clock, batch(offer("a", "2.00")))
    assert len(_days(engine, settings, START + timedelta(days=15))) == 15
