"""Serving workloads in a plan carry the serverless APIs: their month at the workload's load, which is
cheaper, and the volume from which one chosen node beats each API (tracker.plan.service)."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import pytest

from providers.adapters.reference import ReferenceRates
from providers.adapters.vastai import VastAi
from providers.cassette import Cassette, bundled_cassette
from tracker.clock import utcnow
from tracker.estimate.serving.job import HOURS_PER_MONTH
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.plan.mix import load_mix
from tracker.plan.service import options_for, plan_live
from tracker.storage.engine import session_scope

MINIMAL = Path(__file__).resolve().parents[3] / "examples" / "minimal.yaml"


@pytest.fixture
def seeded(engine, settings):
    jobs = [ScrapeJob(ReferenceRates), ScrapeJob(VastAi, "replay", Cassette.load(bundled_cassette("vastai")))]
    asyncio.run(run_scrape(jobs, engine, settings))
    yield


def test_serving_workloads_carry_the_apis(engine, settings, seeded):
    mix = load_mix(MINIMAL.read_text())
    with session_scope(engine) as session:
        result = plan_live(engine, session, settings, utcnow(), mix, options_for(mix))
    by_name = {w["name"]: w for w in result["workloads"]}
    assert "api_alternatives" not in by_name["small-finetune"]  # training: no per-token alternative
    serving = by_name["big-serving"]
    alt, choice = serving["api_alternatives"], serving["choice"]
    assert alt["model"] == "llama-3.1-70b" and alt["demand_tokens_per_month"] == pytest.approx(5e9, rel=1e-3)
    for api in alt["apis"]:
        # 1000 prompt tokens ride on every 200 generated ones.
        assert api["usd_per_mtok"] == api["output_usd_per_mtok"] + api["input_usd_per_mtok"] * 5
        assert float(api["monthly_cost"]) == pytest.approx(float(api["usd_per_mtok"]) * 5e3, rel=1e-3)
        be = api["break_even"]
        machine = Decimal(str(choice["price_per_hour"])) * Decimal(repr(HOURS_PER_MONTH))
        assert be["machine_usd_per_month"] == machine.quantize(Decimal("0.000001"))
    cheapest = alt["cheapest_api"]
    own = Decimal(str(choice["monthly_cost"]))
    assert alt["cheaper"] == ("api" if cheapest["monthly_cost"] < own else "self-hosted")
