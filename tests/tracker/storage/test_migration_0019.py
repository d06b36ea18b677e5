"""Migration 0019 on both backends: (gpu_id, valid_from) gives way to one index holding every column a
card's history reads, which the history query then reads alone (an index-only scan on Postgres, a covering
index on SQLite); the downgrade puts the old index back, and the schema matches the models at head."""

from __future__ import annotations

from sqlalchemy import inspect, text

from tests.tracker.storage.test_migrations import blank_engine  # noqa: F401  (the fixture)
from tracker.storage import migrations as migrate

HISTORY_QUERY = (
    "SELECT offer_id, valid_from, valid_to, price_per_gpu_hour FROM offer_prices WHERE gpu_id = 'H100-SXM-80GB'"
    " AND pricing = 'on_demand' AND price_kind = 'asking' AND orderable AND valid_from < '2026-12-01'"
    " AND (valid_to IS NULL OR valid_to > '2026-01-01')"
)


def _indexes(engine) -> set[str]:
    return {i["name"] for i in inspect(engine).get_indexes("offer_prices")}


def test_history_index_replaces_the_card_time_index_and_covers_the_history_query(blank_engine):  # noqa: F811
    migrate.upgrade(blank_engine, "0018")
    assert _indexes(blank_engine) == {"ix_offer_prices_offer_from", "ix_offer_prices_gpu_from"}
    migrate.upgrade(blank_engine, "0019")
    assert _indexes(blank_engine) == {"ix_offer_prices_offer_from", "ix_offer_prices_history"}
    columns = next(
        i for i in inspect(blank_engine).get_indexes("offer_prices") if i["name"] == "ix_offer_prices_history"
    )
    assert columns["column_names"][:3] == ["gpu_id", "pricing", "valid_from"]
    with blank_engine.connect() as conn:
        if blank_engine.dialect.name == "postgresql":
            conn.execute(text("SET enable_seqscan = off; SET enable_bitmapscan = off"))  # an empty table
            plan = "\n".join(conn.execute(text("EXPLAIN " + HISTORY_QUERY)).scalars())
            # Each partition has its own copy of the index, named after its columns.
            assert "Index Only Scan" in plan and "gpu_id_pricing_valid_from" in plan
        else:
            plan = " ".join(str(r[-1]) for r in conn.execute(text("EXPLAIN QUERY PLAN " + HISTORY_QUERY)))
            assert "COVERING INDEX ix_offer_prices_history" in plan
    migrate.downgrade(blank_engine, "0018")
    assert _indexes(blank_engine) == {"ix_offer_prices_offer_from", "ix_offer_prices_gpu_from"}
    migrate.upgrade(blank_engine)
    migrate.check(blank_engine)
