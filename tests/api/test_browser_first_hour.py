"""The dashboard says what its figures mean (headless Chromium): a sparkline stays inside its tile at laptop
and phone widths and a legend says what its two lines are; a median says how many offers it is of; the
providers page says when its runs were demo replays."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from api.app import create_app
from tests.factories.browser import LAPTOP, PHONE, browser, console_errors, open_view  # noqa: F401
from tests.factories.dashboard import seed
from tests.factories.servers import serve
from tracker.config import Settings
from tracker.market.live import LIVE
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine, session_scope

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The seeded dashboard database, with every provider's last run a demo replay."""
    from providers.registry import all_providers
    from tracker.storage.tables import ScrapeRun

    data = tmp_path_factory.mktemp("first-hour")
    settings = Settings(data_dir=data, database_url=f"sqlite:///{data / 'tracker.db'}")
    engine = make_engine(settings.resolved_database_url())
    migrate.upgrade(engine)
    LIVE.clear()
    now = datetime.now(UTC)
    seed(engine, settings, now)
    with session_scope(engine) as s:
        for name in all_providers():
            s.add(ScrapeRun(provider=name, status="ok", started_at=now, finished_at=now, source="demo"))
    try:
        with serve(create_app(settings, engine), start_timeout=30) as base:
            yield base
    finally:
        engine.dispose()
        LIVE.clear()


# 750 and 1100 px: two and three 340 px tile columns at their narrowest, where the sparkline used to overflow.
@pytest.mark.parametrize("size", [LAPTOP, PHONE, (750, 900), (1100, 900)])
def test_sparklines_stay_inside_their_tiles_and_are_explained(browser, demo_server, size):  # noqa: F811
    browser.set_window_size(*size)
    try:
        open_view(browser, demo_server, "market", "market")
        outside = browser.execute_script("""
            const bad = [];
            for (const tile of document.querySelectorAll('#market-cards .tile')) {
              const t = tile.getBoundingClientRect();
              for (const s of tile.querySelectorAll('svg.spark')) {
                const r = s.getBoundingClientRect();
                if (r.left < t.left - 0.5 || r.right > t.right + 0.5) bad.push(tile.dataset.gpu);
              }
              if (tile.scrollWidth > tile.clientWidth + 1) bad.push(`${tile.dataset.gpu} (content wider)`);
            }
            return bad;""")
        assert outside == []
        legend = browser.find_element("css selector", ".spark-legend").text
        assert "median" in legend and "lowest price" in legend
        notes = [n.text for n in browser.find_elements("css selector", "#market-cards .prow .price .note")]
        assert notes and all("median of" in n or "from 1 offer" in n for n in notes)
    finally:
        browser.set_window_size(*LAPTOP)
    assert console_errors(browser, allowed=()) == []


def test_the_providers_page_says_its_runs_were_demo_replays(browser, demo_server):  # noqa: F811
    open_view(browser, demo_server, "health", "health")
    note = browser.find_element("id", "providers-note")
    assert note.is_displayed() and "demo replays" in note.text and "not today's market" in note.text
    assert browser.find_elements("css selector", "#providers-table .badge.demo")
    assert browser.find_element("id", "demo-banner").is_displayed()
