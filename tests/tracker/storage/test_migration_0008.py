"""Migration 0008 on both backends: stored prices (all quoted in USD before it) get their native figures
back-filled exactly, and neither the upgrade nor the downgrade loses a price or availability row (no
table rebuild on SQLite, whose foreign keys would cascade a dropped `offers`)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from sqlalchemy import MetaData, Table, insert, select, text
from sqlalchemy.exc import IntegrityError

from tests.tracker.storage.test_migrations import blank_engine  # noqa: F401  (the fixture)
from tracker.storage import migrations as migrate
from tracker.storage.engine import session_scope
from tracker.storage.tables import FxRate

SEEN = datetime(2026, 11, 30, 8, 15, 30, 123456, tzinfo=UTC)


def _seed_at_0007(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        # The tables as 0007 left them (the models already have 0008's columns).
        meta = MetaData()
        offers, prices, availability = (
            Table(t, meta, autoload_with=conn) for t in ("offers", "offer_prices", "offer_availability")
        )
        conn.execute(
            insert(offers),
            [
                {
                    "id": 1,
                    "provider": "vastai",
                    "offer_key": "k1",
                    "gpu_id": "H100-SXM-80GB",
                    "gpu_family": "H100",
                    "raw_gpu_name": "H100 SXM",
                    "gpu_count": Decimal(8),
                    "form_factor": "sxm",
                    "pricing": "on_demand",
                    "region": "us",
                    "available": True,
                    "attributes": {},
                    "demo": False,
                    "first_seen": SEEN,
                    "last_seen": SEEN,
                    "delisted_at": None,
                    "price_per_hour": Decimal("16.4"),
                    "price_per_gpu_hour": Decimal("2.05"),
                }
            ],
        )
        conn.execute(
            insert(prices),
            [
                {
                    "offer_id": 1,
                    "gpu_id": "H100-SXM-80GB",
                    "pricing": "on_demand",
                    "valid_from": SEEN,
                    "valid_to": None,
                    "price_per_hour": Decimal("16.4"),
                    "price_per_gpu_hour": Decimal("2.05"),
                }
            ],
        )
        conn.execute(insert(availability), [{"offer_id": 1, "available": True, "valid_from": SEEN}])


def _counts(engine) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return tuple(  # type: ignore[return-value]
            conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()
            for t in ("offers", "offer_prices", "offer_availability")
        )


def test_backfill_keeps_usd_history_and_downgrade_loses_no_row(blank_engine):  # noqa: F811
    migrate.upgrade(blank_engine, "0007")
    _seed_at_0007(blank_engine)
    migrate.upgrade(blank_engine, "0008")
    assert _counts(blank_engine) == (1, 1, 1)
    with session_scope(blank_engine) as s:
        # The tables as revision 0008 has them: later revisions add columns the ORM model already maps.
        meta = MetaData()
        offer = s.execute(select(Table("offers", meta, autoload_with=s.connection()))).one()
        price = s.execute(select(Table("offer_prices", meta, autoload_with=s.connection()))).one()
        for row in (offer, price):
            assert row.currency == "USD"
            assert (row.price_native_per_hour, row.price_native_per_gpu_hour) == (Decimal("16.4"), Decimal("2.05"))
            assert (row.price_per_hour, row.price_per_gpu_hour) == (Decimal("16.4"), Decimal("2.05"))
            assert row.fx_rate is None and row.fx_date is None and row.fx_source is None
        assert price.change_kind == "price"
        # The table as revision 0008 has it (later revisions add columns the ORM model already maps).
        runs = Table("scrape_runs", MetaData(), autoload_with=s.connection())
        counts = dict.fromkeys(
            (
                "offers_seen",
                "offers_valid",
                "offers_new",
                "price_rows",
                "offers_closed",
                "offers_reopened",
                "unknown_names",
                "invalid_offers",
                "attempt",
            ),
            0,
        )
        s.execute(
            insert(runs).values(
                provider="vastai", source="live", status="ok", started_at=SEEN, parser_version="1", **counts
            )
        )
        s.add(
            FxRate(
                currency="EUR",
                rate_date=date(2026, 11, 30),
                usd_per_unit=Decimal("1.0773"),
                source="ecb",
                fetched_at=SEEN,
            )
        )
    with session_scope(blank_engine) as s:
        assert s.execute(text("SELECT fx_rows FROM scrape_runs")).scalar_one() == 0
        rate = s.scalars(select(FxRate)).one()
        assert (rate.rate_date, rate.usd_per_unit) == (date(2026, 11, 30), Decimal("1.0773"))
    # One rate per currency, day and source: a re-fetch updates, never duplicates.
    with pytest.raises(IntegrityError), session_scope(blank_engine) as s:
        s.add(
            FxRate(
                currency="EUR",
                rate_date=date(2026, 11, 30),
                usd_per_unit=Decimal("1.08"),
                source="ecb",
                fetched_at=SEEN,
            )
        )
    migrate.upgrade(blank_engine)  # the models describe head: compare there
    migrate.check(blank_engine)
    migrate.downgrade(blank_engine, "0007")
    assert _counts(blank_engine) == (1, 1, 1)
    with blank_engine.connect() as conn:
        stored = conn.execute(text("SELECT price_per_gpu_hour FROM offer_prices")).scalar_one()
    assert Decimal(str(stored)) == Decimal("2.05")
    migrate.upgrade(blank_engine)
    migrate.check(blank_engine)
