"""The "Plan a fleet" page in headless Chromium: plan the example mix, check the table and both charts.

Reuses the dashboard test's server (a year of seeded prices) and browser; skipped like it where Chromium
is missing.
"""

from __future__ import annotations

import pytest

from tests.factories.browser import (
    CANVAS_INK,
    SHOTS,
    console_errors,
    open_view,
    wait_state,
)

pytestmark = pytest.mark.browser


def test_plan_page_plans_the_example_mix_and_draws_both_charts(browser, server):
    from selenium.webdriver.support.ui import WebDriverWait

    open_view(browser, server, "plan", "plan", state="ready-form")
    assert "workloads:" in browser.find_element("id", "plan-source").get_attribute("value")
    browser.find_element("id", "plan-submit").click()
    wait_state(browser, "plan", "ready")
    rows = browser.find_elements("css selector", "#plan-table tbody tr")
    plan = browser.execute_script("return window.dashboard.plan")
    assert len(rows) == len(plan["workloads"]) == 4
    planned = [w for w in plan["workloads"] if w["status"] == "ok"]
    assert planned, plan["workloads"]
    for row, w in zip(rows, plan["workloads"], strict=True):
        text = row.text
        assert w["name"] in text
        c = w["choice"]
        assert (f"{c['gpus_per_node']}× {c['gpu']}" in text) if c else (w["status"] in text)
    fleet_rows = browser.find_elements("css selector", "#plan-fleet tbody tr")
    assert len(fleet_rows) == len(plan["fleet"]["cards"]) >= 1
    assert "planned on" in browser.find_element("id", "plan-summary").text

    # Stacked bars: the mixed fleet first, one segment per planned workload, totals matching the plan.
    bars = browser.execute_script("return window.dashboard.planBars")
    assert bars[0]["label"] == "Mixed fleet" and len(bars[0]["parts"]) == len(planned)
    assert bars[0]["total"] == pytest.approx(plan["fleet"]["monthly_cost"], rel=1e-6)
    segments = browser.find_elements("css selector", "#plan-bars svg rect.segment")
    assert len(segments) == sum(len(b["parts"]) for b in bars)
    if plan["single_card"]["best"]:
        assert any(b["label"] == f"Only {plan['single_card']['best']['gpu']}" for b in bars)

    # The 90-day line: mixed fleet and best single card per day.
    WebDriverWait(browser, 30).until(lambda d: d.execute_script("return window.dashboard.charts.plan?.data[0].length"))
    assert browser.execute_script("return window.dashboard.charts.plan.data[0].length") > 20
    assert browser.execute_script("return window.dashboard.charts.plan.series.map(s => s.label)") == [
        "Day",
        "Mixed fleet",
        "Best single card type",
    ]
    assert browser.execute_script(CANVAS_INK, "#plan-chart") > 1000
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "plan-laptop.png"))
    assert console_errors(browser) == []


def test_plan_page_explains_a_bad_mix(browser, server):
    open_view(browser, server, "plan", "plan", state="ready-form")
    source = browser.find_element("id", "plan-source")
    bad = (
        "workloads:\n  - name: oops\n    kind: fine-tune\n    job: {model: llama-3.1-8b, tokens: 1M}\n"
        "    volume: {runs_per_month: -3}\n"
    )
    browser.execute_script("arguments[0].value = arguments[1]", source, bad)
    browser.find_element("id", "plan-submit").click()
    wait_state(browser, "plan", "error")
    text = browser.find_element("id", "plan-error").text
    assert "oops" in text and "runs_per_month" in text
    # The refused request is the only console entry.
    assert console_errors(browser, ("/v1/plan - Failed to load resource",)) == []
