"""GET /v1/index: the typed answer, CSV by parameter or Accept, and bad input refused naming the field."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.market.live import LiveOffers
from tracker.market.responses import IndexAnswer

START = datetime(2026, 9, 1, tzinfo=UTC)
NOW = datetime(2026, 9, 4, 12, tzinfo=UTC)


@pytest.fixture
def client(engine, settings) -> Iterator[TestClient]:
    clock = FakeClock(START)
    while clock() < NOW:
        for n, provider in enumerate(("aws", "lambdalabs", "fluidstack")):
            listed = [offer("8x", str(16 + n * 4), count=8, region="us-east-1")]
            do_ingest(engine, settings, clock, batch(*listed), provider=provider)
        clock.advance(hours=4)
    app = create_app(settings, engine, live=LiveOffers(), clock=lambda: NOW)
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def test_index_answer(client: TestClient) -> None:
    r = client.get("/v1/index", params={"card": "H100", "days": 3})
    assert r.status_code == 200, r.text
    body = IndexAnswer.model_validate(r.json())
    assert body.version == "gpi-1" and body.areas == ["global", "us", "eu", "apac"]
    glob = [v for v in body.values if v.area == "global"]
    assert [str(v.day) for v in glob] == ["2026-09-01", "2026-09-02", "2026-09-03"]  # complete days only
    # 2, 2.5 and 3 $/GPU-h at a third each: 10 % trimmed from each tail leaves the mean at 2.5.
    assert all(v.published and v.value == 2.5 for v in glob)
    assert [p.provider for p in glob[0].providers] == ["aws", "fluidstack", "lambdalabs"]
    assert glob[0].offers == 3 and glob[0].p25 == 2.0 and glob[0].p75 == 3.0
    eu = [v for v in body.values if v.area == "eu"]
    assert all(not v.published and v.reason == "no offers" for v in eu)


def test_index_csv_by_parameter_and_by_accept(client: TestClient) -> None:
    by_param = client.get("/v1/index", params={"card": "H100", "days": 2, "format": "csv"})
    by_accept = client.get("/v1/index", params={"card": "H100", "days": 2}, headers={"accept": "text/csv"})
    for r in (by_param, by_accept):
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert by_param.text == by_accept.text
    rows = list(csv.DictReader(io.StringIO(by_param.text)))
    assert len(rows) == 2 * 4
    assert rows[0]["version"] == "gpi-1" and rows[0]["value"] == "2.500000"
    assert rows[0]["providers"] == "aws:1:0.333333 fluidstack:1:0.333333 lambdalabs:1:0.333333"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"days": 0}, "days"),
        ({"days": 99999}, "days"),
        ({"days": "many"}, "days"),
        ({"area": "mars"}, "area"),
        ({"version": "gpi-0"}, "version"),
        ({"format": "xml"}, "format"),
    ],
)
def test_bad_input_names_the_field(client: TestClient, params: dict[str, str | int], field: str) -> None:
    r = client.get("/v1/index", params=params)
    assert r.status_code == 422, r.text
    assert field in r.text


def test_unknown_card_is_a_404_with_suggestions(client: TestClient) -> None:
    r = client.get("/v1/index", params={"card": "H900"})
    assert r.status_code == 404 and "H100" in r.text
