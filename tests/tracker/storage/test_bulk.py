"""Bulk writes (tracker.storage.bulk): rows given as a generator, read once, executed in chunks on SQLite and
COPYed on Postgres, land the same on both. COPY applies no Python-side column defaults, so the callers give
every column, as these rows do."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select

from tracker.storage.bulk import INSERT_CHUNK, insert_rows, insert_tuples
from tracker.storage.engine import session_scope
from tracker.storage.tables import FxRate

AT = datetime(2026, 11, 1, tzinfo=UTC)
DAY0 = date(2000, 1, 1)
COLUMNS = ["currency", "rate_date", "usd_per_unit", "source", "fetched_at"]


def _rows(n: int, reads: list[int]) -> Iterator[dict[str, Any]]:
    for i in range(n):
        reads.append(i)
        yield {
            "currency": "EUR",
            "rate_date": DAY0 + timedelta(days=i),
            "usd_per_unit": Decimal("1.08"),
            "source": "ecb",
            "fetched_at": AT,
        }


def test_a_generator_larger_than_a_chunk_is_read_once_and_written_whole(engine):
    n = INSERT_CHUNK * 2 + 7
    reads: list[int] = []
    with session_scope(engine) as s:
        insert_rows(s, FxRate, _rows(n, reads))
    assert reads == list(range(n))
    with session_scope(engine) as s:
        count, last = s.execute(select(func.count(), func.max(FxRate.rate_date))).one()
    assert (count, last) == (n, DAY0 + timedelta(days=n - 1))


def test_nothing_to_write_writes_nothing(engine):
    with session_scope(engine) as s:
        insert_rows(s, FxRate, iter(()))
        insert_tuples(s, FxRate, COLUMNS, iter(()))
    with session_scope(engine) as s:
        assert s.scalar(select(func.count()).select_from(FxRate)) == 0


def test_tuples_in_columns_order_land_as_rows(engine):
    n = INSERT_CHUNK + 1
    rows = (("USD" if i % 2 else "GBP", DAY0 + timedelta(days=i), Decimal("1.27"), "ecb", AT) for i in range(n))
    with session_scope(engine) as s:
        insert_tuples(s, FxRate, COLUMNS, rows)
    with session_scope(engine) as s:
        got = s.execute(select(FxRate.currency, FxRate.usd_per_unit).order_by(FxRate.rate_date)).all()
    assert len(got) == n
    assert got[0] == ("GBP", Decimal("1.27")) and got[-1] == ("GBP", Decimal("1.27"))
    assert {c for c, _ in got} == {"GBP", "USD"}


def test_sqlite_stores_tuples_exactly_as_a_core_insert_does(sqlite_engine, monkeypatch):
    # Every kind of column an ingest writes (text, numeric, bool, JSON, aware datetime, date, NULLs), read
    # back raw: the driver's executemany with each type's bind processor stores what Core's insert stores.
    import tracker.storage.bulk as bulk
    from tests.conftest import _empty
    from tracker.storage.tables import Offer

    def offers() -> Iterator[dict[str, Any]]:
        for i, (attributes, memory) in enumerate((({"a": [1, 2.5, None], "b": "é"}, Decimal("80.00")), ({}, None))):
            yield {
                "provider": "p", "offer_key": f"k{i}", "gpu_id": "H100-SXM-80GB", "gpu_family": "H100",
                "raw_gpu_name": "H100", "gpu_count": Decimal("0.125"), "gpu_memory_gb": memory, "form_factor": "sxm",
                "pricing": "spot", "reserved_term": None, "region": "", "instance_type": None, "available": i == 0,
                "vcpus": None, "ram_gb": Decimal("1024.5"), "attributes": attributes, "price_kind": "asking",
                "orderable": True, "demo": False, "first_seen": AT, "last_seen": AT + timedelta(microseconds=7),
                "delisted_at": None, "price_per_hour": Decimal("2.123456"), "price_per_gpu_hour": Decimal("16.98"),
                "currency": "EUR", "price_native_per_hour": Decimal("1.9"), "price_native_per_gpu_hour": None,
                "fx_rate": Decimal("1.117608000001"), "fx_date": DAY0, "fx_source": "ecb", "observed_digest": "d" * 32,
            }  # fmt: skip

    def raw() -> list[tuple[Any, ...]]:
        with sqlite_engine.connect() as conn:
            return [tuple(r) for r in conn.exec_driver_sql("SELECT * FROM offers ORDER BY id")]

    _empty(sqlite_engine)
    with session_scope(sqlite_engine) as s:
        insert_rows(s, Offer, offers())
    fast = raw()
    _empty(sqlite_engine)
    monkeypatch.setattr(bulk, "TUPLE_DIALECTS", frozenset({"postgresql"}))  # Core's executemany
    with session_scope(sqlite_engine) as s:
        insert_rows(s, Offer, offers())
    assert fast == raw() and len(fast) == 2
