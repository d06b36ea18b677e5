"""Export → import into an empty database: every history answer is the same, on SQLite and Postgres."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from api.app import create_app
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.clock import utcnow
from tracker.history.dataset import DatasetError
from tracker.history.export import write_export
from tracker.history.imports.export_dir import import_export
from tracker.market.live import LiveOffers
from tracker.market.offers import price_at
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferAvailability, OfferPrice, ScrapeRun

START = datetime(2026, 9, 1, tzinfo=UTC)
JOB = {"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M", "assumptions": "seed", "gpu": "H100"}


def _history(engine, settings):
    """Three weeks of hourly-ish scrapes: price changes, availability flips, a delisting, a return, an outage."""
    clock = FakeClock(START)
    for step in range(60):
        a = offer("a", str(2 + (step // 10) * 0.1), available=step % 7 != 3)
        b = offer("b", "2.5", count=2, gpu="A100-SXM-80GB", region="us-east")
        c = offer("c", str(1.8 + (step % 3) * 0.05), gpu="H100-SXM-80GB", region="eu")
        listed = [a, b] if 20 <= step < 30 else [a, b, c]  # c delisted for ten scrapes, then back
        if step != 40:  # step 40: the provider is down (a gap)
            do_ingest(engine, settings, clock, batch(*listed))
        do_ingest(engine, settings, clock, batch(offer("x", "3.1", region="r1")), provider="lambdalabs")
        clock.advance(hours=8)


# Both databases are asked at the same instant: shares of the time tracked so far depend on "now".
ANSWERED_AT = datetime.now(UTC)


def _answers(engine, settings):
    out: dict[Any, Any] = {}
    end = START + timedelta(days=25)
    app = create_app(settings, engine, live=LiveOffers(), clock=lambda: ANSWERED_AT)
    with TestClient(app, raise_server_exceptions=False) as client:
        for gpu in ("H100", "A100"):
            for interval in ("1h", "1d", "1w"):
                r = client.get(
                    "/v1/market/history",
                    params={"gpu": gpu, "interval": interval, "start": START.isoformat(), "end": end.isoformat()},
                )
                assert r.status_code == 200, r.text
                out[("market", gpu, interval)] = r.json()
        r = client.post("/v1/rank/history", json=JOB | {"days": 365})
        assert r.status_code == 200, r.text
        out["rank"] = r.json()
        for days in (7, 30, 365):
            r = client.get("/v1/availability", params={"gpu": "H100", "days": days})
            assert r.status_code == 200, r.text
            out[("availability", days)] = r.json()
    with session_scope(engine) as session:
        offers = session.execute(select(Offer.id, Offer.provider, Offer.offer_key)).all()
        for offer_id, provider, key in offers:
            rows = session.execute(
                select(
                    OfferPrice.valid_from,
                    OfferPrice.valid_to,
                    OfferPrice.price_per_gpu_hour,
                    OfferPrice.change_kind,
                    OfferPrice.currency,
                )
                .where(OfferPrice.offer_id == offer_id)
                .order_by(OfferPrice.valid_from)
            ).all()
            avail = session.execute(
                select(OfferAvailability.valid_from, OfferAvailability.valid_to, OfferAvailability.available)
                .where(OfferAvailability.offer_id == offer_id)
                .order_by(OfferAvailability.valid_from)
            ).all()
            at = [price_at(session, offer_id, START + timedelta(hours=h)) for h in range(0, 600, 37)]
            out[("offer", provider, key)] = (rows, avail, [p.price_per_gpu_hour if p else None for p in at])
    return _strip(out)


def _strip(value):
    """The answers without what a request adds itself (its own time)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in {"as_of", "generated_at"}}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_import_round_trip_answers_every_history_query_the_same(engine, other_engine, settings, tmp_path, fmt):
    _history(engine, settings)
    before = _answers(engine, settings)
    with session_scope(engine) as session:
        manifest = write_export(session, tmp_path / "out", fmt=fmt, generated_at=utcnow())
    assert {f["table"] for f in manifest["files"]} == {"runs", "prices", "availability", "offers"}
    assert len([f for f in manifest["files"] if f["table"] == "runs"]) == 20  # one file per UTC day
    assert manifest["runs_by_day"]["2026-09-14"]["vastai"] == {"ok": 2}  # the outage day: 2 of 3 runs

    target = settings.model_copy(update={"database_url": other_engine.url.render_as_string(hide_password=False)})
    with session_scope(other_engine) as session:
        report = import_export(session, tmp_path / "out", now=utcnow())
    assert report.price_rows > 0 and report.skipped == 0
    assert _answers(other_engine, target) == before

    # Idempotent: a second import adds nothing, and the answers stay the same.
    with session_scope(other_engine) as session:
        again = import_export(session, tmp_path / "out", now=utcnow())
    assert (again.runs, again.offers_new, again.price_rows, again.availability_rows) == (0, 0, 0, 0)
    assert _answers(other_engine, target) == before
    with session_scope(other_engine) as session:
        labels = set(session.scalars(select(ScrapeRun.source)))
        assert labels == {"import"}
        assert (
            session.scalar(
                select(func.count()).select_from(ScrapeRun).where(ScrapeRun.source_version.like("export:live:%"))
            )
            == report.runs
        )


def test_import_never_rewrites_stored_history_only_fills_before_it(engine, other_engine, settings, tmp_path):
    _history(engine, settings)
    with session_scope(engine) as session:
        write_export(session, tmp_path / "out", fmt="jsonl", generated_at=utcnow())
    # The target already observed offer "a" live from day 10 on, at another price.
    target = settings.model_copy(update={"database_url": other_engine.url.render_as_string(hide_password=False)})
    clock = FakeClock(START + timedelta(days=10))
    do_ingest(other_engine, target, clock, batch(offer("a", "9.99")))
    with session_scope(other_engine) as session:
        live_rows = session.execute(select(OfferPrice.valid_from, OfferPrice.price_per_hour)).all()
        import_export(session, tmp_path / "out", now=utcnow())
    with session_scope(other_engine) as session:
        a = session.scalar(select(Offer.id).where(Offer.offer_key == "a", Offer.provider == "vastai"))
        rows = session.execute(
            select(OfferPrice.valid_from, OfferPrice.valid_to, OfferPrice.price_per_hour)
            .where(OfferPrice.offer_id == a)
            .order_by(OfferPrice.valid_from)
        ).all()
        first_live = START + timedelta(days=10)
        assert [(r.valid_from, r.price_per_hour) for r in rows if r.valid_from >= first_live] == live_rows
        before = [r for r in rows if r.valid_from < first_live]
        assert before and before[0].valid_from == START and all(r.valid_to <= first_live for r in before)
        assert session.get_one(Offer, a).first_seen == START


def test_a_changed_file_refuses_the_import_and_writes_nothing(engine, other_engine, settings, tmp_path):
    _history(engine, settings)
    with session_scope(engine) as session:
        manifest = write_export(session, tmp_path / "out", fmt="csv", generated_at=utcnow())
    prices = next(f["name"] for f in manifest["files"] if f["table"] == "prices" and f["rows"] > 1)
    victim = tmp_path / "out" / prices
    lines = victim.read_bytes().splitlines(keepends=True)
    victim.write_bytes(b"".join(lines[:-1]))  # a truncated file
    with pytest.raises(DatasetError, match="SHA-256"), session_scope(other_engine) as session:
        import_export(session, tmp_path / "out", now=utcnow())
    with session_scope(other_engine) as session:
        assert session.scalar(select(func.count()).select_from(OfferPrice)) == 0
