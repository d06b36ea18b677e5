"""The Index view (headless Chromium): a week of three clouds' H100 prices drawn as the daily index, with
the latest values, their providers and weights, and a CSV link; a screenshot is kept for review."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from api.app import create_app
from tests.factories.browser import SHOTS, console_errors, open_view
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tests.factories.servers import serve
from tracker.config import Settings
from tracker.market.live import LiveOffers
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine

pytestmark = pytest.mark.browser

CHART = """
const u = window.dashboard.charts[arguments[0]];
return {labels: u.series.map((s) => s.label), global: u.data[3], days: u.data[0].length};
"""


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    data = tmp_path_factory.mktemp("index")
    settings = Settings(data_dir=data, database_url=f"sqlite:///{data / 'tracker.db'}")
    engine = make_engine(settings.resolved_database_url())
    migrate.upgrade(engine)
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    clock = FakeClock(today - timedelta(days=8))
    while clock() < datetime.now(UTC) - timedelta(minutes=5):
        day = (clock() - (today - timedelta(days=8))).days
        for n, provider in enumerate(("aws", "lambdalabs", "fluidstack")):
            price = 16 + n * 4 + day * 0.4 * (1 if n else -1)
            listed = [offer("8x", f"{price:.2f}", count=8, region="us-east-1" if n < 2 else "eu-west-1")]
            do_ingest(engine, settings, clock, batch(*listed), provider=provider)
        clock.advance(hours=3)
    with serve(create_app(settings, engine, live=LiveOffers()), start_timeout=30) as base:
        yield base
    engine.dispose()


def test_the_index_view_draws_the_daily_index_with_its_providers(browser, week):
    open_view(browser, week, "index/H100/30d", "index")
    chart = browser.execute_script(CHART, "index")
    assert chart["labels"][:4] == ["Day", "global p75", "global p25", "global"]
    values = [v for v in chart["global"] if v is not None]
    assert len(values) == 8  # eight complete UTC days, each published (three providers)
    assert all(2.2 < v < 3.3 for v in values)
    rows = browser.find_elements("css selector", "#index-table tbody tr")
    assert [r.find_elements("css selector", "td")[0].text for r in rows] == ["global", "us", "eu", "apac"]
    assert "aws (1, 33 %)" in rows[0].text and "fewer than the 3 needed" in rows[1].text
    link = browser.find_element("css selector", "#index-csv a").get_attribute("href")
    assert "/v1/index?" in link and "format=csv" in link
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "index-week.png"))
    assert console_errors(browser) == []


def test_a_range_with_nothing_published_says_why_in_the_apis_words(browser, week):
    # No A100 was ever listed: the API's reason is "no offers", not "fewer than three providers".
    open_view(browser, week, "index/A100/30d", "index", state="empty")
    text = browser.find_element("css selector", "#index-chart").text
    assert "No published value in this range: no offers (" in text, text
    assert "fewer than three" not in text
