"""Migration 0020 on both backends: offers gain `observed_digest`, empty on the rows already stored, which
the next ingest compares in full and gives one (tracker.ingest.digest); the downgrade drops the column and
keeps the rows, and the schema matches the models at head."""

from __future__ import annotations

from sqlalchemy import inspect, text

from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tests.tracker.storage.test_migrations import blank_engine  # noqa: F401  (the fixture)
from tracker.config import Settings
from tracker.storage import migrations as migrate

ROW = (
    "INSERT INTO offers (provider, offer_key, gpu_id, gpu_family, raw_gpu_name, gpu_count, form_factor, pricing,"
    " region, attributes, demo, first_seen, last_seen, price_per_hour, price_per_gpu_hour, currency)"
    " VALUES ('vastai', 'a', 'H100-SXM-80GB', 'H100', 'H100-SXM-80GB', 1, 'sxm', 'on_demand', '', '{}', false,"
    " '2026-11-01 00:00:00', '2026-11-01 00:00:00', 2.0, 2.0, 'USD')"
)


def _columns(engine) -> set[str]:
    return {c["name"] for c in inspect(engine).get_columns("offers")}


def test_offers_gain_an_observed_digest_that_the_next_ingest_fills(blank_engine, tmp_path):  # noqa: F811
    migrate.upgrade(blank_engine, "0019")
    with blank_engine.begin() as conn:
        conn.execute(text(ROW))
    migrate.upgrade(blank_engine, "0020")
    assert "observed_digest" in _columns(blank_engine)
    with blank_engine.connect() as conn:
        assert conn.execute(text("SELECT observed_digest FROM offers")).scalar_one() is None
    settings = Settings(data_dir=tmp_path, database_url=blank_engine.url.render_as_string(hide_password=False))
    report = do_ingest(blank_engine, settings, FakeClock(), batch(offer("a", "2.00")))
    assert (report.offers_new, report.price_rows) == (0, 0)  # the same offer, compared in full
    with blank_engine.connect() as conn:
        assert len(conn.execute(text("SELECT observed_digest FROM offers")).scalar_one()) == 32
    migrate.downgrade(blank_engine, "0019")
    assert "observed_digest" not in _columns(blank_engine)
    with blank_engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM offers")).scalar_one() == 1
    migrate.upgrade(blank_engine)
    migrate.check(blank_engine)
