"""The serving form in headless Chromium: an inference job is ranked by $/Mtok and each top card's
$/Mtok-vs-concurrency curve is drawn (api/static/js/serving.js). Same server and browser as the
dashboard's browser tests; skipped the same way when Chromium is missing."""

from __future__ import annotations

import pytest

from tests.factories.browser import CANVAS_INK, console_errors, open_view

pytestmark = pytest.mark.browser


def _wait_serving(driver, state: str, timeout: float = 60) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    script = "return document.getElementById('serving-section').dataset.state"
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script) in (state, "error"))
    assert driver.execute_script(script) == state, driver.find_element("id", "serving-error").text


def _fill(driver, element_id: str, value: str) -> None:
    field = driver.find_element("id", element_id)
    field.clear()
    field.send_keys(value)


def test_serving_form_ranks_by_usd_per_mtok_and_draws_the_concurrency_curve(browser, server) -> None:
    open_view(browser, server, "job", "job", state="ready-form")
    _wait_serving(browser, "ready-form")
    _fill(browser, "serving-model", "llama-3.1-8b")
    _fill(browser, "serving-concurrency", "16")
    browser.find_element("id", "serving-submit").click()
    _wait_serving(browser, "ready")
    rows = browser.find_elements("css selector", "#serving-table tbody tr")
    assert len(rows) >= 3
    costs = [
        float(r.find_elements("css selector", "td")[2].text.lstrip("$").replace(",", ""))
        for r in rows
        if not {"unfit", "sold-out"} & set((r.get_attribute("class") or "").split())
    ]
    assert costs == sorted(costs) and costs[0] > 0
    assert "live offers fit" in browser.find_element("id", "serving-summary").text
    chart = browser.execute_script(
        "const u = window.dashboard.charts.serving; return u && {series: u.series.length, x: u.data[0],"
        " y: u.data.slice(1).map((s) => s.filter((v) => v !== null))}"
    )
    assert chart["series"] >= 3  # x plus two cards or more
    assert chart["x"][:3] == [1, 2, 4]
    for ys in chart["y"]:
        assert len(ys) >= 3 and ys == sorted(ys, reverse=True)  # more users in flight: cheaper tokens
    assert browser.execute_script(CANVAS_INK, "#serving-chart") > 1000
    # The serverless APIs for the model: a table with the break-even volume, and flat dashed lines on the chart.
    apis = browser.find_elements("css selector", "#serving-apis-table tbody tr")
    assert browser.find_element("id", "serving-apis").is_displayed() and len(apis) >= 2
    assert "renting wins from" in browser.find_element("id", "serving-apis-note").text.lower()
    labels = browser.execute_script("return window.dashboard.charts.serving.series.map((s) => s.label)")
    flat = [ys for label, ys in zip(labels[1:], chart["y"], strict=True) if label.endswith(" API")]
    assert len(flat) == len(apis) and all(len(set(ys)) == 1 for ys in flat)
    assert console_errors(browser) == []


def test_serving_form_explains_bad_input(browser, server) -> None:
    open_view(browser, server, "job", "job", state="ready-form")
    _wait_serving(browser, "ready-form")
    _fill(browser, "serving-model", "no-such-model-xyz")
    browser.find_element("id", "serving-submit").click()
    _wait_serving(browser, "error")
    assert "no-such-model-xyz" in browser.find_element("id", "serving-error").text
    console_errors(browser, allowed=("/v1/rank - Failed to load resource", "/v1/alerts - Failed to load resource"))


def test_serving_form_prices_its_monthly_load_with_a_pricing_column(browser, server) -> None:
    # "Output tokens / month" is the load the rows are priced at: each fitting row has its month's cost,
    # and the Pricing column says the price is on-demand (the serving default; spot only when asked).
    from tests.factories.browser import SHOTS

    browser.set_window_size(1600, 1000)  # wide enough for the optional columns
    open_view(browser, server, "job", "job", state="ready-form")
    _wait_serving(browser, "ready-form")
    _fill(browser, "serving-model", "llama-3.1-8b")
    _fill(browser, "serving-load", "10B")
    browser.find_element("id", "serving-submit").click()
    _wait_serving(browser, "ready")
    heads = [h.text for h in browser.find_elements("css selector", "#serving-table thead th")]
    assert "Pricing" in heads and "$ / month" in heads, heads
    pricing, month = heads.index("Pricing"), heads.index("$ / month")
    rows = [
        [td.text for td in r.find_elements("css selector", "td")]
        for r in browser.find_elements("css selector", "#serving-table tbody tr")
        if "unfit" not in (r.get_attribute("class") or "").split()
    ]
    assert rows and all(cells[pricing] == "on-demand" for cells in rows)
    assert all(cells[month].startswith("$") for cells in rows)  # "—" without a monthly load
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "serving-monthly-load.png"))
    assert console_errors(browser) == []
