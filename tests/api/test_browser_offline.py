"""Offline means offline: with every host but this machine unreachable, each dashboard view and `/docs`
load and work (no asset comes from a CDN)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.factories.browser import SHOTS, chromium, console_errors, open_view

pytestmark = pytest.mark.browser

# Every name resolves to nothing except loopback, and any proxy is a dead port: a request that leaves
# this machine fails at once, as it does on a host without a network.
OFFLINE = (
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=127.0.0.1",
)


@pytest.fixture(scope="module")
def offline_browser() -> Iterator[object]:
    with chromium(OFFLINE) as driver:
        yield driver


def test_the_offline_browser_really_is_offline(offline_browser) -> None:
    from selenium.common.exceptions import WebDriverException

    with pytest.raises(WebDriverException, match="net::ERR_"):
        offline_browser.get("https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css")


@pytest.mark.parametrize(
    ("fragment", "view", "state"),
    [
        ("market", "market", "ready"),
        ("history/H100-SXM-80GB/30d", "history", "ready"),
        ("job", "job", "ready-form"),
        ("plan", "plan", "ready-form"),
        ("health", "health", "ready"),
    ],
)
def test_every_view_loads_offline(offline_browser, server, fragment: str, view: str, state: str) -> None:
    open_view(offline_browser, server, fragment, view, state=state)
    assert console_errors(offline_browser) == []


def test_docs_render_offline(offline_browser, server) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    offline_browser.get(f"{server}/docs")
    WebDriverWait(offline_browser, 30).until(
        lambda d: d.find_elements("css selector", ".swagger-ui .opblock-summary-path")
    )
    title = offline_browser.find_element("css selector", ".swagger-ui .info .title").text
    assert "gpu-price-tracker" in title
    paths = [e.text for e in offline_browser.find_elements("css selector", ".opblock-summary-path")]
    assert any("/v1/rank" in p for p in paths) and any("/v1/offers" in p for p in paths)
    SHOTS.mkdir(parents=True, exist_ok=True)
    offline_browser.save_screenshot(str(SHOTS / "docs-offline.png"))
    assert console_errors(offline_browser, allowed=()) == []
