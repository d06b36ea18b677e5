"""Migration 0018 on both backends: on Postgres the history tables become partitioned by month with their
rows, ids and id sequence kept, one partition per month the rows span plus the coming months and a
DEFAULT; the downgrade makes plain tables again with the rows kept. On SQLite both directions leave the
tables as they are. The schema matches the models after upgrading either way."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import MetaData, insert, inspect, text

from tests.tracker.storage.test_migrations import blank_engine  # noqa: F401  (the fixture)
from tracker.storage import migrations as migrate
from tracker.storage.partitions import add_months, month_start, partition_name

OLD = datetime(2025, 10, 17, 8, 0, tzinfo=UTC)


def _tables(engine) -> MetaData:
    # The tables as the database has them at its revision, never the head models.
    tables = MetaData()
    tables.reflect(engine, only=["scrape_runs", "offers", "offer_prices", "offer_availability"])
    return tables


def _seed(engine) -> None:
    t = _tables(engine).tables
    with engine.begin() as conn:
        conn.execute(
            insert(t["offers"]),
            [
                {
                    "provider": "p",
                    "offer_key": "k",
                    "gpu_id": "H100-SXM-80GB",
                    "gpu_family": "H100",
                    "raw_gpu_name": "H100",
                    "gpu_count": 1,
                    "gpu_memory_gb": Decimal(80),
                    "form_factor": "SXM",
                    "pricing": "on_demand",
                    "region": "r",
                    "price_per_hour": Decimal(2),
                    "price_per_gpu_hour": Decimal(2),
                    "first_seen": OLD,
                    "last_seen": OLD,
                    "attributes": {},
                    "demo": False,
                }
            ],
        )
        offer_id = conn.execute(text("SELECT id FROM offers")).scalar_one()
        prices = [
            {
                "offer_id": offer_id,
                "gpu_id": "H100-SXM-80GB",
                "pricing": "on_demand",
                "valid_from": OLD + timedelta(days=30 * i),
                "valid_to": OLD + timedelta(days=30 * (i + 1)),
                "price_per_hour": Decimal(2 + i),
                "price_per_gpu_hour": Decimal(2 + i),
            }
            for i in range(3)
        ]
        conn.execute(insert(t["offer_prices"]), prices)
        conn.execute(
            insert(t["offer_availability"]),
            [{"offer_id": offer_id, "available": True, "valid_from": OLD, "valid_to": None}],
        )


def _rows(engine, table: str) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(f"SELECT id, valid_from, valid_to FROM {table} ORDER BY id"))]


def _partitions(engine, table: str) -> set[str]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                " WHERE i.inhparent = :t ::regclass"
            ),
            {"t": table},
        )
        return {r[0] for r in rows}


def _insert_price(engine, at: datetime) -> int:
    with engine.begin() as conn:
        return conn.execute(
            text(
                "INSERT INTO offer_prices (offer_id, gpu_id, pricing, valid_from, price_per_hour, price_per_gpu_hour)"
                " SELECT id, gpu_id, pricing, :at, 1, 1 FROM offers RETURNING id"
            ),
            {"at": at},
        ).scalar_one()


def test_history_partitioned_on_postgres_upgrade_and_downgrade(blank_engine):  # noqa: F811
    migrate.upgrade(blank_engine, "0017")
    _seed(blank_engine)
    prices, availability = _rows(blank_engine, "offer_prices"), _rows(blank_engine, "offer_availability")
    migrate.upgrade(blank_engine, "0018")
    assert _rows(blank_engine, "offer_prices") == prices
    assert _rows(blank_engine, "offer_availability") == availability
    pg = blank_engine.dialect.name == "postgresql"
    if pg:
        now = month_start(datetime.now(UTC))
        for table in ("offer_prices", "offer_availability"):
            names = _partitions(blank_engine, table)
            month, expected = month_start(OLD), {partition_name(table, None)}
            while month <= add_months(now, 3):
                expected.add(partition_name(table, month))
                month = add_months(month, 1)
            assert names == expected
            indexes = {i["name"] for i in inspect(blank_engine).get_indexes(table)}
            assert (
                indexes == {"ix_offer_prices_offer_from", "ix_offer_prices_gpu_from"}
                if table == "offer_prices"
                else {"ix_offer_availability_offer_from"}
            )
            pk = inspect(blank_engine).get_pk_constraint(table)
            assert pk["constrained_columns"] == ["id", "valid_from"]
        # Each month's rows are in that month's partition, and the sequence continues past the copied ids.
        with blank_engine.connect() as conn:
            where = conn.execute(text("SELECT tableoid::regclass::text FROM offer_prices ORDER BY id")).scalars().all()
        assert where == [partition_name("offer_prices", month_start(r[1])) for r in prices]
    new_id = _insert_price(blank_engine, datetime.now(UTC))
    assert new_id > max(r[0] for r in prices)
    far = _insert_price(blank_engine, datetime(2040, 1, 1, tzinfo=UTC))  # no partition: DEFAULT takes it
    if pg:
        with blank_engine.connect() as conn:
            home = conn.execute(text("SELECT tableoid::regclass::text FROM offer_prices WHERE id = :i"), {"i": far})
            assert home.scalar_one() == "offer_prices_default"
    migrate.upgrade(blank_engine)  # head (0019's index on top), then back down through it
    migrate.check(blank_engine)

    migrate.downgrade(blank_engine, "0017")
    after = _rows(blank_engine, "offer_prices")
    assert [r[0] for r in after] == [r[0] for r in prices] + [new_id, far]
    assert _rows(blank_engine, "offer_availability") == availability
    if pg:
        assert not _partitions(blank_engine, "offer_prices")
        assert inspect(blank_engine).get_pk_constraint("offer_prices")["constrained_columns"] == ["id"]
    assert _insert_price(blank_engine, datetime.now(UTC)) > far  # the sequence survived both ways
    migrate.upgrade(blank_engine)
    assert [r[0] for r in _rows(blank_engine, "offer_prices")][: len(after)] == [r[0] for r in after]
    migrate.check(blank_engine)
