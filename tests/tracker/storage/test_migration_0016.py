"""Migration 0016 on both backends: every stored price reads as an orderable asking price, except the ones
whose adapter now says otherwise (Mithril's clears and reserves, a rented Clore server's rate), back-filled
from what the offers hold; the downgrade drops the columns and loses no row."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import MetaData, Table, insert, inspect, text

from tests.tracker.storage.test_migrations import blank_engine  # noqa: F401  (the fixture)
from tracker.storage import migrations as migrate

SEEN = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
OFFERS = {  # id: (provider, available, attributes)
    1: ("vastai", True, {}),
    2: ("mithril", True, {"price_source": "last_instance_price"}),
    3: ("mithril", True, {"price_source": "minimum_price"}),
    4: ("clore", False, {}),
    5: ("clore", True, {}),
}


def _seed_at_0012(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        meta = MetaData()
        offers, prices = (Table(t, meta, autoload_with=conn) for t in ("offers", "offer_prices"))
        common = {"gpu_id": "H100-SXM-80GB", "pricing": "on_demand", "price_per_hour": Decimal(2)}
        conn.execute(
            insert(offers),
            [
                common
                | {
                    "id": i,
                    "provider": provider,
                    "offer_key": f"k{i}",
                    "gpu_family": "H100",
                    "raw_gpu_name": "H100",
                    "gpu_count": Decimal(1),
                    "form_factor": "sxm",
                    "region": "",
                    "available": available,
                    "attributes": attributes,
                    "demo": False,
                    "first_seen": SEEN,
                    "last_seen": SEEN,
                    "price_per_gpu_hour": Decimal(2),
                }
                for i, (provider, available, attributes) in OFFERS.items()
            ],
        )
        rows = [common | {"offer_id": i, "valid_from": SEEN, "price_per_gpu_hour": Decimal(2)} for i in OFFERS]
        conn.execute(insert(prices), rows)


def _kinds(engine, table: str) -> dict[int, tuple[str, bool]]:  # type: ignore[no-untyped-def]
    key = "id" if table == "offers" else "offer_id"
    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT {key}, price_kind, orderable FROM {table}")).all()
    return {i: (kind, bool(orderable)) for i, kind, orderable in rows}


def test_backfill_marks_clears_reserves_and_rented_rates_and_downgrade_loses_no_row(blank_engine):  # noqa: F811
    migrate.upgrade(blank_engine, "0012")
    _seed_at_0012(blank_engine)
    migrate.upgrade(blank_engine, "0016")
    expected = {
        1: ("asking", True),
        2: ("transacted", False),
        3: ("floor", False),
        4: ("transacted", False),
        5: ("asking", True),
    }
    assert _kinds(blank_engine, "offers") == expected
    assert _kinds(blank_engine, "offer_prices") == expected
    migrate.downgrade(blank_engine, "0012")
    with blank_engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM offer_prices")).scalar_one() == len(OFFERS)
        columns = {c["name"] for c in inspect(conn).get_columns("offers")}
    assert "price_kind" not in columns and "orderable" not in columns
