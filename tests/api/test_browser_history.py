"""The history chart over a brand-new install and over a year of imported history (headless Chromium).

One observation: the axis ends now (never years into the future) and the lone point is labelled
"history starts <date>". A year of imported daily RunPod snapshots with a three-week outage: the 1y view
spans the year, the outage is a gap (nulls, no line across it) and the imported stretch is named.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest

from api.app import create_app
from providers.adapters.runpod import RunPod
from tests.factories.browser import SHOTS, console_errors, open_view
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tests.factories.price_history import price_history_dir
from tests.factories.servers import serve
from tracker.config import Settings
from tracker.history.imports.aggregates import import_aggregates
from tracker.history.imports.snapshots import import_snapshots
from tracker.market.live import LiveOffers
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine, session_scope

pytestmark = pytest.mark.browser
H100 = "NVIDIA H100 80GB HBM3"
OUTAGE = range(200, 221)  # days ago with no snapshot


def _server(tmp_path_factory, name, fill):
    data = tmp_path_factory.mktemp(name)
    settings = Settings(data_dir=data, database_url=f"sqlite:///{data / 'tracker.db'}")
    engine = make_engine(settings.resolved_database_url())
    migrate.upgrade(engine)
    fill(engine, settings, data)
    return settings, engine


@pytest.fixture(scope="module")
def new_install(tmp_path_factory):
    now = datetime.now(UTC)

    def fill(engine, settings, _):
        do_ingest(engine, settings, FakeClock(now - timedelta(hours=2)), batch(offer("h1", "2.49", gpu=H100)))

    settings, engine = _server(tmp_path_factory, "one", fill)
    with serve(create_app(settings, engine, live=LiveOffers()), start_timeout=30) as base:
        yield base, now
    engine.dispose()


@pytest.fixture(scope="module")
def imported_year(tmp_path_factory):
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)

    def fill(engine, settings, data):
        snaps = data / "snaps"
        snaps.mkdir()
        for ago in range(365, 0, -1):
            if ago in OUTAGE:
                continue
            price = round(2.4 + 0.3 * math.sin(ago / 30), 2)
            entry = {
                "id": H100,
                "displayName": "H100 SXM",
                "memoryInGb": 80,
                "maxGpuCount": 8,
                "secureCloud": True,
                "communityCloud": True,
                "securePrice": price,
                "communityPrice": round(price * 0.8, 2),
            }
            at = now - timedelta(days=ago)
            (snaps / f"{at:%Y-%m-%dT%H-%M-%S}+00-00_x.json").write_text(json.dumps([entry]))
        with session_scope(engine) as session:
            report = import_snapshots(session, snaps, RunPod, settings=settings, now=now)
        assert report.runs == 365 - len(OUTAGE) and report.quarantined == 0, report.notes
        with session_scope(engine) as session:  # the real Prime Intellect series (Oct–Nov 2025)
            import_aggregates(session, price_history_dir("primeintellect-aggregates"), source="primeintellect")

    settings, engine = _server(tmp_path_factory, "year", fill)
    with serve(create_app(settings, engine, live=LiveOffers()), start_timeout=30) as base:
        yield base, now
    engine.dispose()


FRAME = (
    "const u = window.dashboard.charts[arguments[0]];"
    "return {min: u.scales.x.min, max: u.scales.x.max, times: u.data[0], median: u.data[2],"
    " labels: u.series.map(s => s.label), start: document.querySelector('#history-chart .chart-start')?.textContent,"
    " key: document.getElementById('history-key').textContent};"
)


def test_one_observation_ends_the_axis_now_and_labels_the_point(browser, new_install):
    base, now = new_install
    for view in ("90d", "7d"):
        open_view(browser, base, f"history/H100-SXM-80GB/{view}", "history")
        chart = browser.execute_script(FRAME, "history")
        assert abs(chart["max"] - now.timestamp()) < 600, "the axis ends now"
        assert chart["min"] >= (now - timedelta(days=1, hours=1)).timestamp(), "starts at the history, not 90 days back"
        values = [v for v in chart["median"] if v is not None]
        # 90d: one daily bucket per UTC day the two hours since the observation touch (two just after midnight);
        # 7d: the hourly buckets since.
        days = len({(now - timedelta(hours=2)).date(), now.date()})
        assert set(values) == {2.49} and len(values) == (days if view == "90d" else 3)
        assert chart["start"] == f"history starts {(now - timedelta(hours=2)):%Y-%m-%d}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "history-one-observation.png"))
    assert console_errors(browser) == []


def test_a_year_of_imported_history_spans_the_year_with_a_gap_at_the_outage(browser, imported_year):
    base, now = imported_year
    open_view(browser, base, "history/H100-SXM-80GB/1y", "history")
    chart = browser.execute_script(FRAME, "history")
    assert chart["max"] - chart["min"] >= 364 * 86400 and abs(chart["max"] - datetime.now(UTC).timestamp()) < 600
    by_day = {datetime.fromtimestamp(t, UTC).date(): v for t, v in zip(chart["times"], chart["median"], strict=True)}
    outage = [(now - timedelta(days=d)).date() for d in OUTAGE]
    inner = outage[1:-1]  # the outage's first and last day hold part of an observation's day
    assert all(by_day.get(d, "missing") is None for d in inner), "no line across the outage"
    assert all(by_day[(now - timedelta(days=d)).date()] is not None for d in (230, 190))  # drawn either side
    assert sum(v is not None for v in chart["median"]) >= 340
    assert "imported history: runpod (snapshots)" in chart["key"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "history-imported-year.png"))
    assert console_errors(browser) == []


def test_the_external_series_is_a_toggle_and_the_axis_reaches_back_to_it(browser, imported_year):
    from selenium.webdriver.support.ui import WebDriverWait

    base, _ = imported_year
    open_view(browser, base, "history/H100-SXM-80GB/all", "history")
    labels = "return window.dashboard.charts.history.series.map(s => s.label)"
    assert not any("external" in label for label in browser.execute_script(labels))
    first = browser.execute_script("return window.dashboard.charts.history.scales.x.min")
    browser.find_element("id", "history-external").click()
    WebDriverWait(browser, 30).until(lambda d: "primeintellect median (external)" in d.execute_script(labels))
    chart = browser.execute_script(FRAME, "history")
    assert chart["min"] < first <= chart["min"] + 86400 * 7 * 60  # back to Oct 2025, not to 2015
    assert datetime.fromtimestamp(chart["min"], UTC) <= datetime(2025, 10, 20, tzinfo=UTC)
    external = browser.execute_script("const u = window.dashboard.charts.history; return u.data[u.data.length - 1]")
    assert sum(v is not None for v in external) >= 4  # four weeks of the series, weekly buckets
    assert chart["start"].startswith("history starts ")  # still our own history's first day
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "history-external-series.png"))
    assert console_errors(browser) == []
