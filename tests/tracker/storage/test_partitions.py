"""ensure_partitions: creates the coming months (and nothing else), moves the rows DEFAULT took for a month
it now creates into that month, is idempotent and safe with two processes, and does nothing on SQLite.
`gpu-tracker db upgrade` runs it, and `db partitions` lists them."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import insert, text

from tests.tracker.storage.test_migrations import blank_engine  # noqa: F401  (the fixture)
from tracker.storage import migrations as migrate
from tracker.storage.partitions import (
    add_months,
    ensure_partitions,
    list_partitions,
    month_start,
    months,
    partition_name,
)
from tracker.storage.tables import Offer, OfferAvailability, OfferPrice

FAR = datetime(2031, 5, 14, 12, 0, tzinfo=UTC)  # years after any month 0018 created


def test_month_arithmetic():
    assert month_start(datetime(2026, 12, 31, 23, 59, tzinfo=UTC)) == datetime(2026, 12, 1, tzinfo=UTC)
    assert add_months(datetime(2026, 11, 1, tzinfo=UTC), 3) == datetime(2027, 2, 1, tzinfo=UTC)
    assert add_months(datetime(2026, 1, 1, tzinfo=UTC), -1) == datetime(2025, 12, 1, tzinfo=UTC)
    assert months(datetime(2026, 11, 20, tzinfo=UTC), datetime(2027, 1, 2, tzinfo=UTC)) == [
        datetime(2026, 11, 1, tzinfo=UTC),
        datetime(2026, 12, 1, tzinfo=UTC),
        datetime(2027, 1, 1, tzinfo=UTC),
    ]
    assert partition_name("offer_prices", datetime(2027, 2, 1, tzinfo=UTC)) == "offer_prices_y2027m02"


def _offer(conn) -> int:
    conn.execute(
        insert(Offer),
        [
            {
                "provider": "p",
                "offer_key": "k",
                "gpu_id": "H100-SXM-80GB",
                "gpu_family": "H100",
                "raw_gpu_name": "H100",
                "gpu_count": 1,
                "form_factor": "SXM",
                "pricing": "on_demand",
                "region": "r",
                "attributes": {},
                "demo": False,
                "price_per_hour": Decimal(2),
                "price_per_gpu_hour": Decimal(2),
                "first_seen": FAR,
                "last_seen": FAR,
            }
        ],
    )
    return int(conn.execute(text("SELECT id FROM offers")).scalar_one())


def _price(offer_id: int, at: datetime) -> dict[str, object]:
    return {
        "offer_id": offer_id,
        "gpu_id": "H100-SXM-80GB",
        "pricing": "on_demand",
        "valid_from": at,
        "price_per_hour": Decimal(2),
        "price_per_gpu_hour": Decimal(2),
    }


def _home(engine, table: str) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(text(f"SELECT tableoid::regclass::text FROM {table} ORDER BY id")).scalars())


def test_rows_in_default_move_into_the_month_created(blank_engine):  # noqa: F811
    migrate.upgrade(blank_engine)
    with blank_engine.begin() as conn:
        offer_id = _offer(conn)
        # Written before anyone created FAR's month (and one a month later): DEFAULT takes them.
        conn.execute(insert(OfferPrice), [_price(offer_id, FAR), _price(offer_id, add_months(FAR, 1))])
        conn.execute(insert(OfferAvailability), [{"offer_id": offer_id, "available": True, "valid_from": FAR}])
    if blank_engine.dialect.name != "postgresql":
        assert ensure_partitions(blank_engine, FAR) == []  # SQLite: plain tables, nothing to make
        assert list_partitions(blank_engine) == []
        return
    assert _home(blank_engine, "offer_prices") == ["offer_prices_default"] * 2
    created = ensure_partitions(blank_engine, FAR, months_ahead=2)
    expected = [
        partition_name(t, m) for t in ("offer_prices", "offer_availability") for m in months(FAR, add_months(FAR, 2))
    ]
    assert created == expected
    # FAR's row and the next month's moved out of DEFAULT; nothing else moved, nothing was lost.
    assert _home(blank_engine, "offer_prices") == ["offer_prices_y2031m05", "offer_prices_y2031m06"]
    assert _home(blank_engine, "offer_availability") == ["offer_availability_y2031m05"]
    assert ensure_partitions(blank_engine, FAR, months_ahead=2) == []  # idempotent
    # A row of a month long past (a bulk load of old history) lands in DEFAULT; the next run gives it its month.
    old = datetime(2024, 2, 29, 23, 30, tzinfo=UTC)
    with blank_engine.begin() as conn:
        conn.execute(insert(OfferPrice), [_price(offer_id, old)])
    assert ensure_partitions(blank_engine, FAR, months_ahead=2) == ["offer_prices_y2024m02"]
    assert _home(blank_engine, "offer_prices")[-1] == "offer_prices_y2024m02"
    # Attached partitions got the parent's indexes and primary key.
    with blank_engine.connect() as conn:
        indexes = set(
            conn.execute(text("SELECT indexname FROM pg_indexes WHERE tablename = 'offer_prices_y2031m06'")).scalars()
        )
    assert len(indexes) == 3  # (id, valid_from) key, (offer_id, valid_from), (gpu_id, valid_from)
    counts = {p.partition: p.rows for p in list_partitions(blank_engine)}
    assert counts["offer_prices_y2031m05"] == counts["offer_prices_y2031m06"] == 1
    assert counts["offer_prices_default"] == 0
    # `since`: the months from there on, made empty before a bulk load (nothing to move).
    assert ensure_partitions(blank_engine, FAR, months_ahead=0, since=add_months(FAR, -2)) == [
        "offer_prices_y2031m03",
        "offer_prices_y2031m04",
        "offer_availability_y2031m03",
        "offer_availability_y2031m04",
    ]
    # A missing DEFAULT is made again, so an insert still never fails.
    with blank_engine.begin() as conn:
        conn.execute(text("DROP TABLE offer_availability_default"))
    assert ensure_partitions(blank_engine, FAR, months_ahead=2) == ["offer_availability_default"]


@pytest.mark.postgres
def test_two_processes_create_each_partition_once(pg_url):
    from tracker.storage.engine import make_engine

    engine = make_engine(pg_url)  # a second engine: its own pool, as another process would have
    migrate.upgrade(engine)
    later = add_months(FAR, 24)
    results: list[list[str]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def run() -> None:
        try:
            start.wait()
            results.append(ensure_partitions(engine, later, months_ahead=1))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    engine.dispose()
    assert not errors, errors
    made = sorted(name for names in results for name in names)
    assert made == sorted(
        partition_name(t, m)
        for t in ("offer_prices", "offer_availability")
        for m in months(later, add_months(later, 1))
    )


def test_db_upgrade_creates_the_coming_months(cli, engine):
    result = cli("db", "upgrade")
    assert result.exit_code == 0, result.output
    listed = cli("db", "partitions")
    assert listed.exit_code == 0, listed.output
    if engine.dialect.name == "postgresql":
        assert partition_name("offer_prices", add_months(month_start(datetime.now(UTC)), 3)) in listed.output
        assert f"{month_start(datetime.now(UTC)):%Y-%m-%d} to " in listed.output  # the bounds as days
        assert max(len(line) for line in listed.output.splitlines()) <= 80
    else:
        assert "plain tables" in listed.output
