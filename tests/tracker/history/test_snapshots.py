"""`import snapshots`: eight real RunPod catalog snapshots (June 2025) replayed through RunPod's parser."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from providers.adapters.runpod import RunPod
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tests.factories.price_history import price_history_dir
from tracker.clock import utcnow
from tracker.history.dataset import DatasetError
from tracker.history.imports.snapshots import import_snapshots, list_snapshots, snapshot_time
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferPrice, ScrapeRun

SIZES = (1, 2, 4, 8)


def _hand_count(directory, unknown: set[str], failed: list[str]) -> tuple[int, int]:
    """(price rows, distinct offers) counted from the raw files: an offer is (type, cloud, size, on-demand
    or spot); a row is written when it first appears, when its per-GPU price changes and when it returns."""
    previous: dict[tuple, Decimal] = {}
    rows, ever = 0, set()
    for snap in list_snapshots(directory):
        if snap.path.name in failed:
            continue
        now: dict[tuple, Decimal] = {}
        for t in json.loads(snap.path.read_text()):
            if t["id"] in unknown:
                continue
            for cloud in ("secure", "community"):
                price = t.get(f"{cloud}Price")
                if not t.get(f"{cloud}Cloud", True) or not price or price <= 0:
                    continue
                spot = t.get(f"{cloud}SpotPrice")
                for n in SIZES:
                    if n > (t.get("maxGpuCount") or 0):
                        continue
                    now[(t["id"], cloud, n, "od")] = Decimal(str(price))
                    if spot is not None and 0 < spot < price:
                        now[(t["id"], cloud, n, "spot")] = Decimal(str(spot))
        rows += sum(1 for k, p in now.items() if previous.get(k) != p)
        ever |= set(now)
        previous = now
    return rows, len(ever)


def test_file_names_give_the_time():
    assert snapshot_time("2025-06-15T10-27-05+00-00_aef71e0.json") == datetime(2025, 6, 15, 10, 27, 5, tzinfo=UTC)
    assert snapshot_time("2025-06-15T10:27:05Z.json") == datetime(2025, 6, 15, 10, 27, 5, tzinfo=UTC)
    with pytest.raises(DatasetError, match="timestamp"):
        snapshot_time("gpu_prices.json")


def test_real_runpod_snapshots_replay_as_scrapes_and_a_rerun_adds_nothing(engine, settings):
    directory = price_history_dir("runpod-snapshots")
    with session_scope(engine) as session:
        report = import_snapshots(session, directory, RunPod, settings=settings, now=utcnow())
    assert report.files_read == 8 and report.runs == 8 and report.quarantined == 0, report.notes
    # One capture holds a partial answer (display names and secure prices only, no ids): RunPod's parser
    # refuses it, as a scrape of that answer would fail; the other seven are observations.
    assert report.failed == ["2025-06-15T14-21-16+00-00_beb9df2.json"]
    expected_rows, expected_offers = _hand_count(directory, set(report.unknown_names), report.failed)
    assert report.price_rows == expected_rows
    assert report.offers_new == expected_offers
    with session_scope(engine) as session:
        assert session.scalar(select(func.count()).select_from(OfferPrice)) == expected_rows + report.fx_rows
        runs = session.execute(
            select(ScrapeRun.source, ScrapeRun.source_version, ScrapeRun.observed_at).order_by(ScrapeRun.started_at)
        ).all()
        assert {r.source for r in runs} == {"import"}
        assert runs[0].source_version.startswith("snapshots:2025-06-15T10-27-05+00-00_aef71e0.json@sha256:")
        assert runs[0].observed_at == datetime(2025, 6, 15, 10, 27, 5, tzinfo=UTC)
        # The history ends with the snapshots: nothing is left open to run on into today.
        assert session.scalar(select(func.count()).select_from(OfferPrice).where(OfferPrice.valid_to.is_(None))) == 0
    with session_scope(engine) as session:
        again = import_snapshots(session, directory, RunPod, settings=settings, now=utcnow())
    assert (again.runs, again.price_rows, again.offers_new, again.skipped) == (0, 0, 0, 8)
    with session_scope(engine) as session:
        assert session.scalar(select(func.count()).select_from(OfferPrice)) == expected_rows + report.fx_rows


def test_snapshots_older_than_a_live_scrape_are_skipped_not_written_over_it(engine, settings):
    do_ingest(
        engine,
        settings,
        FakeClock(datetime(2025, 6, 18, tzinfo=UTC)),
        batch(offer("NVIDIA H100 80GB HBM3:1:secure", "2.99")),
        provider="runpod",
    )
    with session_scope(engine) as session:
        report = import_snapshots(
            session, price_history_dir("runpod-snapshots"), RunPod, settings=settings, now=utcnow()
        )
    assert report.skipped == 3 and report.runs == 5  # the three snapshots of June 15 are covered
    with session_scope(engine) as session:
        live = session.scalars(select(Offer).where(Offer.offer_key == "NVIDIA H100 80GB HBM3:1:secure")).one()
        first = session.scalar(select(func.min(OfferPrice.valid_from)).where(OfferPrice.offer_id == live.id))
        assert first == datetime(2025, 6, 18, tzinfo=UTC)


def test_a_snapshot_the_parser_refuses_is_a_failed_run_and_the_rest_are_imported(engine, settings, tmp_path):
    good = price_history_dir("runpod-snapshots")
    first = sorted(good.iterdir())[0]
    (tmp_path / first.name).write_bytes(first.read_bytes())
    (tmp_path / "2025-06-16T00-00-00+00-00_bad.json").write_text('{"unexpected": true}')
    with session_scope(engine) as session:
        report = import_snapshots(session, tmp_path, RunPod, settings=settings, now=utcnow())
    assert report.failed == ["2025-06-16T00-00-00+00-00_bad.json"] and report.price_rows > 0
    with session_scope(engine) as session:
        statuses = dict(session.execute(select(ScrapeRun.source_version, ScrapeRun.status)).all())
        assert sorted(statuses.values()) == ["failed", "ok"]
    with session_scope(engine) as session:  # a re-run adds nothing, the failed one included
        again = import_snapshots(session, tmp_path, RunPod, settings=settings, now=utcnow())
    assert (again.runs, again.skipped) == (0, 2)


def test_a_future_snapshot_is_refused(engine, settings, tmp_path):
    (tmp_path / f"{(utcnow() + timedelta(days=2)).strftime('%Y-%m-%dT%H-%M-%S')}+00-00_x.json").write_text("[]")
    with pytest.raises(DatasetError, match="future"), session_scope(engine) as session:
        import_snapshots(session, tmp_path, RunPod, settings=settings, now=utcnow())
