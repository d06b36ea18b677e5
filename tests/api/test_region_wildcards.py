"""A region filter is text, not a LIKE pattern: `_` and `%` match only themselves, in /v1/offers,
/v1/availability and alert rules, as they always did in /v1/rank (both backends)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from api.app import create_app
from tests.factories.offers import batch, do_ingest, offer
from tracker.market.live import LIVE
from tracker.market.offers import region_condition
from tracker.storage.engine import session_scope
from tracker.storage.sql import like_escape
from tracker.storage.tables import Offer


@pytest.fixture
def client(engine, settings, clock):
    LIVE.clear()
    clock.now = datetime.now(UTC)
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("dash", "2.00", region="us-east-1", available=True),
            offer("under", "2.10", region="us_east-1", available=True),
            offer("pct", "2.20", region="eu%x-1"),
            offer("plain", "2.30", region="euxx-1"),
        ),
    )
    with TestClient(create_app(settings, engine), raise_server_exceptions=False) as c:
        yield c
    LIVE.clear()


def test_offers_region_underscore_is_not_a_wildcard(client):
    r = client.get("/v1/offers", params={"gpu": "H100", "region": "us_east"})
    assert r.status_code == 200, r.text
    assert sorted(o["region"] for o in r.json()["offers"]) == ["us_east-1"]  # before: us-east-1 as well
    dash = client.get("/v1/offers", params={"gpu": "H100", "region": "us-east"}).json()["offers"]
    assert [o["region"] for o in dash] == ["us-east-1"]


def test_availability_region_underscore_is_not_a_wildcard(client):
    def offers_now(*regions: str) -> int:
        r = client.get("/v1/availability", params={"gpu": "H100", "region": list(regions)})
        assert r.status_code == 200, r.text
        return sum(row["offers_now"] for row in r.json()["rows"])

    assert offers_now("us_east") == 1  # before: 2, us-east-1 counted as well
    assert offers_now("us-east") == 1
    assert offers_now("us_east", "us-east") == 2


def test_alert_rules_region_filter_escapes_wildcards(client, engine):
    """The condition alert rules (tracker.alerts.observe) and /v1/availability filter with."""
    with session_scope(engine) as session:
        for wanted, expected in [("us_east", ["under"]), ("us-east", ["dash"]), ("eu%x", ["pct"]), ("eu%", [])]:
            keys = session.scalars(select(Offer.offer_key).where(region_condition([wanted]))).all()
            assert sorted(keys) == expected, wanted


def test_like_escape_escapes_every_wildcard_and_the_escape_itself():
    assert like_escape("a_b%c/d") == "a/_b/%c//d"
