"""`import aws-price-history`: published EC2 versions replayed from a cassette.

Provenance: the version index follows the documented shape of the AWS Price List service version index
(formatVersion, publicationDate, versions{id: versionEffectiveBeginDate, versionEffectiveEndDate,
offerVersionUrl}); each version's us-east-1 CSV is the AWS adapter's bundled cassette (schema-faithful,
prices illustrative), with one price changed in the later version. Built here, never fetched."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from providers.adapters.aws import parse_csv
from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from tracker.clock import utcnow
from tracker.history.dataset import DatasetError
from tracker.history.imports.aws_prices import INDEX_URL, import_aws_history, versions
from tracker.storage.engine import session_scope
from tracker.storage.tables import OfferPrice, ScrapeRun

BASE = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2"
VERSIONS = {
    "20221201000000": "2022-12-01T00:00:00Z",
    "20230120214025": "2023-01-20T21:40:25Z",
    "20230301120000": "2023-03-01T12:00:00Z",
}


def _texts():
    current = Cassette.load(bundled_cassette("aws"))
    text = next(i.text for i in current.interactions if i.url.endswith("/us-east-1/index.csv"))
    assert text is not None
    offers = parse_csv(text, "us-east-1").offers
    # p5.48xlarge on demand in us-east-1, re-priced in the later version.
    lines = text.split("\n")
    (i,) = [n for n, line in enumerate(lines) if line.startswith('"SKU0001ABCDEFGH","JRTCKXETXF"')]
    lines[i] = lines[i].replace('"55.0400000000","USD"', '"49.5000000000","USD"')
    return text, "\n".join(lines), len(offers)


def _cassette():
    v1, v2, _ = _texts()
    index = {
        "formatVersion": "v1.0",
        "publicationDate": "2023-03-01T12:00:00Z",
        "offerCode": "AmazonEC2",
        "versions": {
            vid: {
                "versionEffectiveBeginDate": at,
                "versionEffectiveEndDate": "",
                "offerVersionUrl": f"/offers/v1.0/aws/AmazonEC2/{vid}/index.json",
            }
            for vid, at in VERSIONS.items()
        },
    }
    interactions = [{"request": {"method": "GET", "url": INDEX_URL}, "response": {"status": 200, "json": index}}]
    for vid, text in (("20230120214025", v1), ("20230301120000", v2)):
        response = {"status": 200, "headers": {"content-type": "text/csv"}, "text": text}
        request = {"method": "GET", "url": f"{BASE}/{vid}/us-east-1/index.csv"}
        interactions.append({"request": request, "response": response})
    return Cassette.from_json({"provider": "aws", "interactions": interactions})


def test_published_versions_replay_as_dated_observations(engine, settings):
    cassette = _cassette()
    _, _, offers = _texts()
    since = datetime(2023, 1, 1, tzinfo=UTC)

    def run():
        with session_scope(engine) as session:
            return import_aws_history(
                session,
                settings=settings,
                now=utcnow(),
                since=since,
                regions=("us-east-1",),
                transport=lambda: ReplayTransport(cassette),
            )

    report = run()
    assert report.runs == 2 and report.quarantined == 0 and not report.failed, report.notes
    assert report.price_rows == offers + 1  # every offer once, then the one price that changed
    with session_scope(engine) as session:
        runs = session.execute(select(ScrapeRun.observed_at, ScrapeRun.source_version).order_by(ScrapeRun.id)).all()
        assert [r.source_version for r in runs] == [
            "aws-price-history:20230120214025",
            "aws-price-history:20230301120000",
        ]
        assert runs[0].observed_at == datetime(2023, 1, 20, 21, 40, 25, tzinfo=UTC)
    again = run()
    assert (again.runs, again.price_rows, again.skipped) == (0, 0, 2)
    with session_scope(engine) as session:
        assert session.scalar(select(func.count()).select_from(OfferPrice)) == offers + 1


def test_a_malformed_index_is_refused():
    with pytest.raises(DatasetError, match="versions"):
        versions({"formatVersion": "v1.0"}, None)
    with pytest.raises(DatasetError, match="20230101"):
        versions({"versions": {"20230101": {"offerVersionUrl": "/offers/x/index.json"}}}, None)
