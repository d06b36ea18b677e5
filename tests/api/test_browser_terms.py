"""The term curve in the history view (headless Chromium): $/GPU-hour against commitment length, one point
per commitment with its offer count, a term no offer carries drawn as a gap; the reserved history line is
of the chosen term only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from api.app import create_app
from providers.contract import Pricing
from tests.factories.browser import SHOTS, browser, console_errors, open_view  # noqa: F401
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tests.factories.servers import serve
from tracker.config import Settings
from tracker.market.live import LiveOffers
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine

pytestmark = pytest.mark.browser
H100 = "H100-SXM-80GB"
# $/GPU-h per commitment: falling with length; 3 months has no offer (a gap, "0 offers").
TERMS = {"1d": ("2.60", "2.80"), "7d": ("2.40",), "1mo": ("2.20", "2.30", "2.25"), "1y": ("1.90",), "3y": ("1.60",)}


@pytest.fixture(scope="module")
def term_server(tmp_path_factory):
    data = tmp_path_factory.mktemp("terms")
    settings = Settings(data_dir=data, database_url=f"sqlite:///{data / 'tracker.db'}")
    engine = make_engine(settings.resolved_database_url())
    migrate.upgrade(engine)
    offers = [offer("od1", "2.99"), offer("od2", "3.49"), offer("spot", "1.20", pricing=Pricing.spot)]
    offers += [
        offer(f"{term}-{i}", price, pricing=Pricing.reserved, reserved_term=term)
        for term, prices in TERMS.items()
        for i, price in enumerate(prices)
    ]
    do_ingest(engine, settings, FakeClock(datetime.now(UTC) - timedelta(hours=1)), batch(*offers), provider="aws")
    with serve(create_app(settings, engine, live=LiveOffers()), start_timeout=30) as base:
        yield base
    engine.dispose()


CURVE = "const u = window.dashboard.charts.terms; return {points: u.termPoints, median: u.data[2], spot: u.data[5]};"


def test_the_term_curve_shows_each_commitment_apart(browser, term_server):  # noqa: F811
    from selenium.webdriver.support.ui import WebDriverWait

    open_view(browser, term_server, f"history/{H100}/7d", "history")
    WebDriverWait(browser, 30).until(
        lambda d: d.execute_script("return document.getElementById('terms-chart').dataset.state") == "ready"
    )
    curve = browser.execute_script(CURVE)
    got = {p["label"]: p["offers"] for p in curve["points"]}
    assert got == {"On-demand": 2, "Spot": 1, "1d": 2, "7d": 1, "1mo": 3, "3mo": 0, "1y": 1, "3y": 1}
    # Spot first and apart (no commitment), then the line from on-demand through the terms by length.
    assert [p["label"] for p in curve["points"]] == ["Spot", "On-demand", "1d", "7d", "1mo", "3mo", "1y", "3y"]
    assert curve["median"] == [None, 2.99, 2.6, 2.4, 2.25, None, 1.9, 1.6]
    assert curve["spot"] == [1.2, None, None, None, None, None, None, None]
    key = browser.find_element("id", "terms-key").text
    assert "3mo: 0 offers" in key and "1mo: 3 offers, median $2.25" in key and "1y: 1 offer," in key
    labels = browser.execute_script("return window.dashboard.charts.history.series.map(s => s.label)")
    assert all("Reserved" not in label for label in labels)  # reserved is off by default
    browser.find_element("css selector", "#history-pricing input[value=reserved]").click()
    WebDriverWait(browser, 30).until(
        lambda d: (
            "Reserved 1y median"
            in d.execute_script("return window.dashboard.charts.history?.series.map(s => s.label).join('|') || ''")
        )
    )
    browser.find_element("id", "terms-chart").location_once_scrolled_into_view  # noqa: B018
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "history-term-curve.png"))
    assert console_errors(browser) == []
