"""`import aggregates`: Prime Intellect's real aggregated-marketplace series (Oct–Nov 2025, MIT)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from tests.factories.price_history import price_history_dir
from tracker.history.dataset import DatasetError
from tracker.history.imports.aggregates import import_aggregates, reference_series
from tracker.storage.engine import session_scope
from tracker.storage.tables import ExternalAggregate, Offer


def test_real_aggregates_are_stored_apart_and_a_rerun_adds_nothing(engine):
    directory = price_history_dir("primeintellect-aggregates")
    lines = sum(1 for f in directory.glob("*.jsonl") for line in f.read_text().splitlines() if line.strip())
    with session_scope(engine) as session:
        report = import_aggregates(session, directory, source="primeintellect")
    assert report.files_read == 7 and report.rows_read == lines == report.aggregate_rows
    # "H200_141GB" does not say SXM or NVL: kept unresolved and reported, as a scrape reports it.
    assert report.unknown_names == {"H200_141GB": 957}
    with session_scope(engine) as session:
        assert session.scalar(select(func.count()).select_from(ExternalAggregate)) == lines
        assert session.scalar(select(func.count()).select_from(Offer)) == 0  # never offers
        first = session.scalar(
            select(ExternalAggregate)
            .where(ExternalAggregate.gpu_id == "H100-SXM-80GB")
            .order_by(ExternalAggregate.observed_at)
            .limit(1)
        )
        assert first is not None and first.source_version is not None
        raw = json.loads((directory / "H100_80GB_SXM5.jsonl").read_text().splitlines()[0])
        assert first.observed_at == datetime.fromisoformat(raw["timestamp"])
        assert first.median == Decimal(str(raw["price_stats"]["median"]))
        assert first.offers == raw["availability"]["total"]
        assert first.source_version.startswith("H100_80GB_SXM5.jsonl@sha256:")
        series = reference_series(
            session, ["H100-SXM-80GB"], datetime(2025, 10, 1, tzinfo=UTC), datetime(2025, 12, 1, tzinfo=UTC)
        )
        assert [s["source"] for s in series] == ["primeintellect"] and len(series[0]["points"]) == 957
    with session_scope(engine) as session:
        again = import_aggregates(session, directory, source="primeintellect")
    assert again.aggregate_rows == 0 and again.skipped == lines


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"timestamp": "2025-10-19T21:01:58", "gpu_type": "H100_80GB", "price_stats": {"median": 2}}', "UTC"),
        ('{"timestamp": "2025-10-19T21:01:58+00:00", "gpu_type": "H100_80GB", "price_stats": {"min": 1}}', "median"),
        (
            '{"timestamp": "2025-10-19T21:01:58+00:00", "gpu_type": "H100_80GB", "price_stats": {"median": -3}}',
            "outside",
        ),
        ('{"timestamp": "2025-10-19T21:01:58+00:00", "price_stats": {"median": 2}}', "gpu_type"),
        ("[1, 2]", "object"),
        ("{not json", "line 2"),
    ],
)
def test_a_bad_line_refuses_the_import_naming_it(engine, tmp_path, line, why):
    good = json.dumps({"timestamp": "2025-10-19T21:01:58+00:00", "gpu_type": "H100_80GB", "price_stats": {"median": 2}})
    (tmp_path / "x.jsonl").write_text(good + "\n" + line + "\n")
    with pytest.raises(DatasetError, match=why), session_scope(engine) as session:
        import_aggregates(session, tmp_path, source="t")
    with session_scope(engine) as session:
        assert session.scalar(select(func.count()).select_from(ExternalAggregate)) == 0
