"""The price index recomputed from an export alone, and after importing it into an empty database, gives
exactly the values computed from the database it was exported from (on SQLite and Postgres)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.history.export import write_export
from tracker.history.imports.export_dir import import_export
from tracker.history.index_export import history_from_export
from tracker.market.index import compute
from tracker.market.index_source import baskets, load_history
from tracker.storage.engine import session_scope

START = datetime(2026, 9, 1, tzinfo=UTC)
DAYS = (date(2026, 9, 1), date(2026, 9, 8))


def _history(engine, settings):
    """A week of scrapes every 6 hours at three clouds and a marketplace; prices change, one cloud is down
    for two days, one offer is delisted and comes back."""
    clock = FakeClock(START)
    for step in range(28):
        for n, provider in enumerate(("aws", "lambdalabs", "fluidstack")):
            if provider == "fluidstack" and 8 <= step < 16:
                continue  # down: no observation for two days
            listed = [offer("8x", str(16 + n * 4 + (step // 5) * 0.8), count=8, region="us-east-1")]
            if provider != "aws" or step % 9 != 4:
                listed.append(offer("1x-eu", str(2.1 + n * 0.3 + (step % 4) * 0.05), region="eu-west-1"))
            do_ingest(engine, settings, clock, batch(*listed), provider=provider)
        do_ingest(engine, settings, clock, batch(offer("m1", "1.20"), offer("m2", "1.50")), provider="vastai")
        clock.advance(hours=6)


def _values(history, ids, settings):
    return compute(history, gpu_ids=ids, basket="H100", start=DAYS[0], end=DAYS[1], settings=settings)


def test_the_index_recomputed_from_an_export_is_identical(engine, other_engine, settings, tmp_path):
    _history(engine, settings)
    [(_, ids)] = baskets("H100")
    with session_scope(engine) as session:
        direct = _values(load_history(session, ids, *DAYS, settings), ids, settings)
        write_export(session, tmp_path / "export", fmt="csv", generated_at=START + timedelta(days=8))
    published = [v for v in direct if v.published]
    assert len(published) >= 7  # the global and US series publish every day; the week is really covered
    assert any("fluidstack" not in [p for p, _, _ in v.providers] for v in direct if v.area == "global")

    from_files = _values(history_from_export(tmp_path / "export", ids, DAYS[1], settings), ids, settings)
    assert from_files == direct

    with session_scope(other_engine) as session:
        import_export(session, tmp_path / "export", now=START + timedelta(days=8))
    with session_scope(other_engine) as session:
        assert _values(load_history(session, ids, *DAYS, settings), ids, settings) == direct
