"""Headless Chromium for the dashboard's browser tests: the driver, a seeded server, and page helpers.

Skipped when Chromium or chromedriver is missing, except in CI (CI=true), where that is a failure
(.ci/run installs them). Test modules import the fixtures they use by name.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from api.app import create_app
from tests.factories.dashboard import seed
from tests.factories.servers import serve
from tracker.config import Settings
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine, session_scope

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
LAPTOP, PHONE = (1366, 900), (390, 844)
TOKEN = "dashboard-test-token"
# The alerts API answers 401 until the user gives the page the API token; the page asks for it and
# carries on, but Chromium still logs the refused request. Nothing else may appear in the console.
EXPECTED_NETWORK_ERRORS = ("/v1/alerts - Failed to load resource: the server responded with a status of 401",)


def _alert_rules(engine, now: datetime) -> None:
    from tracker.storage.alert_tables import AlertRule

    with session_scope(engine) as s:
        for name, state, value in (("H100 under $2.50", "firing", "2.39"), ("4090 spot deal", "pending", "0.31")):
            s.add(
                AlertRule(
                    name=name,
                    gpu_query="H100",
                    gpu_ids=["H100-SXM-80GB"],
                    pricing="on_demand",
                    metric="min",
                    condition="below",
                    threshold=Decimal("2.50"),
                    recovery_threshold=Decimal("2.60"),
                    state=state,
                    state_since=now,
                    last_value=Decimal(value),
                    created_at=now,
                    updated_at=now,
                )
            )


def _binary(env: str, path: str, name: str) -> str | None:
    """$env if set (even to a missing file: that is how to force the skip), else Debian's path, else $PATH."""
    if env in os.environ:
        return os.environ[env] if Path(os.environ[env]).is_file() else None
    return path if Path(path).is_file() else shutil.which(name)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The API and dashboard over a database seeded with a year of synthetic prices and two alert rules."""
    data = tmp_path_factory.mktemp("dashboard")
    settings = Settings(data_dir=data, database_url=f"sqlite:///{data / 'tracker.db'}", api_token=TOKEN)
    engine = make_engine(settings.resolved_database_url())
    migrate.upgrade(engine)
    now = datetime.now(UTC)
    seed(engine, settings, now)
    _alert_rules(engine, now)
    try:
        with serve(create_app(settings, engine), start_timeout=30) as base:
            yield base
    finally:
        engine.dispose()


@contextmanager
def chromium(extra_flags: tuple[str, ...] = ()) -> Iterator[object]:
    """A headless Chromium driver with the house flags (and `extra_flags`); skips, or fails in CI, without one."""
    chromium_bin = _binary("CHROMIUM_BIN", "/usr/bin/chromium", "chromium")
    driver_path = _binary("CHROMEDRIVER_BIN", "/usr/bin/chromedriver", "chromedriver")
    if not (chromium_bin and driver_path):
        message = "headless Chromium tests need chromium and chromium-driver (apt-get install chromium chromium-driver)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium_bin
    for flag in (*CHROMIUM_FLAGS, *extra_flags):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_window_size(*LAPTOP)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as driver:
        yield driver


def console_errors(driver, allowed: tuple[str, ...] = EXPECTED_NETWORK_ERRORS) -> list[str]:
    """Severe console entries since the last call, minus the expected ones."""
    entries = driver.get_log("browser")
    return [e["message"] for e in entries if e["level"] == "SEVERE" and not any(a in e["message"] for a in allowed)]


def open_view(driver, base: str, fragment: str, view: str, state: str = "ready", timeout: float = 30) -> None:
    # A fresh page load every time: going from one #fragment to another would reuse the page's state.
    driver.get("about:blank")
    driver.get(f"{base}/#{fragment}")
    wait_state(driver, view, state, timeout)


def wait_state(driver, view: str, state: str, timeout: float = 30) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    script = f"return document.getElementById('view-{view}').dataset.state"
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script) in (state, "error"))
    assert driver.execute_script(script) == state, driver.find_element("id", f"{view}-error").text


CANVAS_INK = """
const canvas = document.querySelector(arguments[0] + ' canvas');
if (!canvas) return -1;
const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
let ink = 0;
for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) ink++;
return ink;
"""
