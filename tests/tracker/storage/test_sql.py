"""Dialect SQL (tracker.storage.sql) answers the same on SQLite and Postgres."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import literal, select
from sqlalchemy.types import JSON

from tracker.storage.engine import session_scope
from tracker.storage.sql import epoch_us, json_members, read_columns, read_columns_by
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


def test_instants_read_in_bulk_are_epoch_us_exactly(engine):
    """What the index and market history read by the ten thousand (tracker.storage.sql.read_columns, one
    aggregate per column) is what `epoch_us` computes in SQL, to the microsecond, NULL as -1; per key too
    (read_columns_by), and nothing read is empty."""
    at = [
        datetime(2026, 11, 1, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2025, 1, 1, tzinfo=UTC),
        datetime(2024, 2, 29, 12, 0, 0, 1, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 500_000, tzinfo=UTC),
    ]
    with session_scope(engine) as s:
        for i, t in enumerate(at):
            s.add(ScrapeRun(provider=f"p{i % 2}", status="ok", started_at=t, finished_at=None, source="live"))
    with session_scope(engine) as s:
        query = select(ScrapeRun.id, ScrapeRun.started_at, ScrapeRun.finished_at)
        ids, started, finished = read_columns(s, query, ("int", "instant", "instant"))
        by_provider = read_columns_by(s, select(ScrapeRun.provider, ScrapeRun.started_at), ("instant",))
        exact = s.execute(select(epoch_us(ScrapeRun.started_at)).order_by(ScrapeRun.id)).scalars().all()
        empty = read_columns(s, query.where(ScrapeRun.id < 0), ("int", "instant", "instant"))
    in_order = started[ids.argsort()].tolist()
    assert in_order == exact == [(t - EPOCH) // timedelta(microseconds=1) for t in at]
    assert finished.tolist() == [-1] * len(at)
    assert {k: sorted(v[0].tolist()) for k, v in by_provider.items()} == {
        "p0": sorted(exact[0::2]),
        "p1": sorted(exact[1::2]),
    }
    assert [a.tolist() for a in empty] == [[], [], []]


def test_read_columns_returns_aligned_arrays_exactly_with_nulls_marked(engine):
    """read_columns (one binary or text aggregate per column, tracker.storage.sql) gives every row's values in
    the same position across columns, instants to the microsecond as `epoch_us` computes them, prices as
    the nearest double, NULL as -1 / NaN; nothing selected is empty arrays."""
    from decimal import Decimal

    from sqlalchemy import Float, cast

    from tracker.storage.tables import Offer, OfferPrice

    at = [
        datetime(2026, 11, 1, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2024, 2, 29, 12, 0, 0, 1, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 500_000, tzinfo=UTC),
    ]
    prices = [Decimal("2.123456"), Decimal("12345678.000001"), Decimal("0.1")]
    with session_scope(engine) as s:
        offer = Offer(
            provider="p",
            offer_key="k",
            gpu_id="H100-SXM-80GB",
            gpu_family="H100",
            raw_gpu_name="H100 SXM",
            form_factor="sxm",
            price_per_hour=Decimal("1"),
            price_per_gpu_hour=Decimal("1"),
            gpu_count=1,
            pricing="on_demand",
            first_seen=at[2],
            last_seen=at[0],
        )
        s.add(offer)
        s.flush()
        for i, (t, price) in enumerate(zip(at, prices, strict=True)):
            s.add(
                OfferPrice(
                    offer_id=offer.id,
                    gpu_id="H100-SXM-80GB",
                    pricing="on_demand",
                    valid_from=t,
                    valid_to=None if i == 1 else t + timedelta(hours=i + 1),
                    price_per_hour=price,
                    price_per_gpu_hour=price,
                )
            )
        offer_id = offer.id
    query = select(
        OfferPrice.offer_id, OfferPrice.valid_from, OfferPrice.valid_to, cast(OfferPrice.price_per_gpu_hour, Float)
    )
    with session_scope(engine) as s:
        ids, lo, to, got = read_columns(
            s, query.order_by(OfferPrice.valid_from), ("int", "instant", "instant", "float")
        )
        exact = s.execute(
            select(epoch_us(OfferPrice.valid_from), epoch_us(OfferPrice.valid_to)).order_by(OfferPrice.valid_from)
        ).all()
        empty = read_columns(s, query.where(OfferPrice.offer_id == -5), ("int", "instant", "instant", "float"))
        # One row whose only instant is NULL: one -1, not no rows.
        (only_open,) = read_columns(s, select(OfferPrice.valid_to).where(OfferPrice.valid_to.is_(None)), ("instant",))
    # Rows come back in some order, the same for every column: pair them up by valid_from.
    order = lo.argsort()
    assert ids[order].tolist() == [offer_id] * 3
    assert lo[order].tolist() == [e[0] for e in exact] == sorted((t - EPOCH) // timedelta(microseconds=1) for t in at)
    assert to[order].tolist() == [-1 if e[1] is None else e[1] for e in exact]
    by_time = {(t - EPOCH) // timedelta(microseconds=1): float(p) for t, p in zip(at, prices, strict=True)}
    assert got[order].tolist() == [by_time[v] for v in lo[order].tolist()]
    assert [len(a) for a in empty] == [0, 0, 0, 0]
    assert only_open.tolist() == [-1]
    with pytest.raises(ValueError, match="one kind"):
        read_columns(s, query, ("int",))


def test_a_document_parsed_once_reads_every_member_as_parsed_per_member(engine):
    """`json_parsed_once` (Postgres: the document cast to jsonb once per row) reads what the plain statement
    reads, member by member, for documents of every shape: strings, numbers (and a number written as a
    string), booleans, nulls, nested values, a missing member, and documents that are not objects."""
    from sqlalchemy import Boolean, Column, Integer, MetaData, Table, insert

    from tracker.storage.sql import json_number, json_parsed_once, json_text

    docs = [
        {"v": "verified", "r": 0.98, "n": 3, "b": True, "z": None, "o": {"x": 1}, "s": "0.5"},
        {"v": "unverified", "r": "0.9", "n": 1e2, "b": False},
        {},
        None,
        [1, 2],
        "text",
        7,
    ]
    table = Table(
        "json_docs_probe",
        MetaData(),
        Column("id", Integer, primary_key=True),
        Column("doc", JSON(none_as_null=True)),
        Column("live", Boolean),
    )
    table.create(engine)
    try:
        with engine.begin() as conn:
            conn.execute(insert(table), [{"id": i, "doc": d, "live": i != 2} for i, d in enumerate(docs)])
        columns = [
            table.c.id,
            *(json_text(table.c.doc, k) for k in ("v", "r", "n", "b", "z", "s", "missing")),
            *(json_number(table.c.doc, k) for k in ("r", "n", "s", "v")),
            json_members(table.c.doc, ("v", "r", "o", "missing")),
        ]
        live = table.c.live.is_(True)
        with engine.connect() as conn:
            plain = conn.execute(select(*columns).where(live).order_by(table.c.id)).all()
            once = json_parsed_once(columns, table, "doc", live, engine.dialect.name)
            parsed = sorted(conn.execute(once).all())
        sql = str(once.compile(dialect=engine.dialect))
        assert ("AS JSONB" in sql and "::json" not in sql) == (engine.dialect.name == "postgresql"), sql
        assert len(plain) == len(docs) - 1
        for a, b in zip(plain, parsed, strict=True):
            # Text of a JSON string, a number's value and the members' JSON values agree; jsonb prints a
            # number in its canonical form (1e2 -> 100), which only a word comparison would see, and
            # json_text is compared with words only.
            assert a[0] == b[0]
            assert [a[1], a[5], a[6], a[7]] == [b[1], b[5], b[6], b[7]], (a, b)
            assert a[8:12] == b[8:12], (a, b)
            assert (a[12] is None) == (b[12] is None)
            if a[12] is not None:
                assert json.loads(a[12]) == json.loads(b[12])
    finally:
        table.drop(engine)
