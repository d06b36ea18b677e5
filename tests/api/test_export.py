"""GET /v1/export streams the dataset as a tar that `import export` reads; GET /v1/market/reference serves
an imported external series."""

from __future__ import annotations

import io
import tarfile

from sqlalchemy import func, select

from tests.factories.api import seeded_client
from tests.factories.price_history import price_history_dir
from tracker.clock import utcnow
from tracker.history.imports.aggregates import import_aggregates
from tracker.history.imports.export_dir import import_export
from tracker.storage.engine import session_scope
from tracker.storage.tables import OfferPrice


def test_export_streams_a_tar_that_imports_back(engine, settings, tmp_path):
    with seeded_client(engine, settings) as client:
        r = client.get("/v1/export", params={"format": "jsonl"})
        assert r.status_code == 200 and r.headers["content-type"] == "application/x-tar"
        with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
            names = tar.getnames()
            tar.extractall(tmp_path / "x", filter="data")
        assert names[-1] == "manifest.json" and any(n.startswith("prices/") for n in names)
        bad = client.get("/v1/export", params={"since": "2026-12-02T00:00:00Z", "until": "2026-12-01T00:00:00Z"})
        assert bad.status_code == 422 and "since" in bad.text
        assert client.get("/v1/export", params={"format": "xml"}).status_code == 422
    with session_scope(engine) as session:
        stored = session.execute(select(func.count()).select_from(OfferPrice)).scalar_one()
        report = import_export(session, tmp_path / "x", now=utcnow())  # into itself: nothing new
    assert report.price_rows == 0 and report.skipped >= stored


def test_reference_series_is_served_for_a_card(engine, settings):
    with session_scope(engine) as session:
        import_aggregates(session, price_history_dir("primeintellect-aggregates"), source="primeintellect")
    with seeded_client(engine, settings, vast=False) as client:
        params = {"gpu": "H100 SXM", "start": "2025-10-01T00:00:00Z", "end": "2025-12-01T00:00:00Z"}
        body = client.get("/v1/market/reference", params=params).json()
        assert [s["source"] for s in body["series"]] == ["primeintellect"]
        assert len(body["series"][0]["points"]) == 957 and body["series"][0]["points"][0]["median"] is not None
        reversed_window = {"gpu": "H100", "start": "2026-01-02T00:00:00Z", "end": "2026-01-01T00:00:00Z"}
        assert client.get("/v1/market/reference", params=reversed_window).status_code == 422
