"""Dialect SQL (tracker.storage.sql) answers the same on SQLite and Postgres."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import literal, select
from sqlalchemy.types import JSON

from tracker.storage.sql import json_members


def test_json_members_reads_several_members_in_one_array_keeping_their_types(engine):
    doc = {"verification": "verified", "reliability": 0.98, "count": 3, "flag": True}
    column = literal(doc, type_=JSON)
    query = select(json_members(column, ("verification", "reliability", "missing", "count", "flag")))
    with engine.connect() as conn:
        text = conn.execute(query).scalar_one()
    assert json.loads(text) == ["verified", 0.98, None, 3, True]


def test_json_members_accepts_only_our_own_member_names():
    with pytest.raises(ValueError, match="member names"):
        json_members(literal("{}"), ("ok", "bad'; drop"))
    with pytest.raises(ValueError, match="member names"):
        json_members(literal("{}"), ("alone",))
