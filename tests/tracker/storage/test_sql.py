"""Dialect SQL (tracker.storage.sql) answers the same on SQLite and Postgres."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import literal, select
from sqlalchemy.types import JSON

from tracker.storage.engine import session_scope
from tracker.storage.sql import bulk_instant, bulk_instants_us, epoch_us, json_members
from tracker.storage.tables import ScrapeRun

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def test_json_members_reads_several_members_in_one_array_keeping_their_types(engine):
    doc = {"verification": "verified", "reliability": 0.98, "count": 3, "flag": True}
    column = literal(doc, type_=JSON)
    query = select(json_members(column, ("verification", "reliability", "missing", "count", "flag")))
    with engine.connect() as conn:
        text = conn.execute(query).scalar_one()
    assert json.loads(text) == ["verified", 0.98, None, 3, True]


@pytest.mark.parametrize("doc", [None, [1, 2], "text", 3, {}])
def test_json_members_of_a_document_that_is_not_an_object_are_all_missing(engine, doc):
    """Postgres reads the members in one json_to_record, which refuses anything but an object: a scalar,
    an array or a JSON null reads as no members, as SQLite's json_extract and `->` read them."""
    query = select(json_members(literal(doc, type_=JSON(none_as_null=False)), ("verification", "select")))
    with engine.connect() as conn:
        text = conn.execute(query).scalar_one()
    assert text is None or json.loads(text) == [None, None]


def test_json_members_accepts_only_our_own_member_names():
    with pytest.raises(ValueError, match="member names"):
        json_members(literal("{}"), ("ok", "bad'; drop"))
    with pytest.raises(ValueError, match="member names"):
        json_members(literal("{}"), ("alone",))


def test_bulk_instants_read_from_the_cursor_are_epoch_us_exactly(engine):
    """What the index reads by the ten thousand (tracker.storage.sql.bulk_instant, straight from the DBAPI
    cursor) is what `epoch_us` computes in SQL, to the microsecond, NULL as -1."""
    at = [
        datetime(2026, 11, 1, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2025, 1, 1, tzinfo=UTC),
        datetime(2024, 2, 29, 12, 0, 0, 1, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 500_000, tzinfo=UTC),
    ]
    with session_scope(engine) as s:
        for i, t in enumerate(at):
            s.add(ScrapeRun(provider=f"p{i}", status="ok", started_at=t, finished_at=None, source="live"))
    with session_scope(engine) as s:
        query = select(bulk_instant(ScrapeRun.started_at), bulk_instant(ScrapeRun.finished_at)).order_by(ScrapeRun.id)
        result = s.connection().execute(query)
        started, finished = zip(*result.cursor.fetchall(), strict=True)
        result.close()
        dialect = s.connection().dialect.name
        exact = s.execute(select(epoch_us(ScrapeRun.started_at)).order_by(ScrapeRun.id)).scalars().all()
    assert (
        bulk_instants_us(started, dialect).tolist() == exact == [(t - EPOCH) // timedelta(microseconds=1) for t in at]
    )
    assert bulk_instants_us(finished, dialect).tolist() == [-1] * len(at)
    assert bulk_instants_us((), dialect).tolist() == []
