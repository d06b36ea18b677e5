"""The plan prices a training workload like the ranking (issue #25, item 4): the whole run's cost
(tracker.costs: billing increments, disk, transfer, spot interruptions), the same default pricing and
the same order (an offer the provider says is sold out ranks after every other), so for one job the plan
and `cheapest` pick the same offer, in the CLI and the API."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from fastapi.testclient import TestClient

from providers.contract import Pricing
from providers.cost_terms import COST_TERMS, terms
from tests.factories.offers import batch, do_ingest, offer
from tracker import money
from tracker.catalog.gpus import get_catalog
from tracker.costs import plan_for, resolve, run_cost
from tracker.estimate import JobInput, prepare

JOB = {"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M"}
CLI_JOB = ("--model", "llama-3.1-8b", "--method", "qlora", "--tokens", "22.5M")
# A host charging for every GB it downloads (the job downloads a 10 GB image and 16 GB of weights), and
# one a little dearer per hour that charges nothing for it: GPU time alone picks the first, the whole
# run the second.
DEAR = {COST_TERMS: terms(ingress_usd_per_gb=Decimal("0.05"), download_mbps=Decimal(1000))}
FREE = {COST_TERMS: terms(ingress_usd_per_gb=Decimal(0), download_mbps=Decimal(1000))}


def _market(engine, settings, clock) -> None:
    clock.now = datetime.now(UTC)  # the commands rank and plan at the real "now": the offers must be live
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("cheap-dear-transfer", "0.30", gpu="RTX 4090", attributes=DEAR),
            offer("free-transfer", "0.33", gpu="RTX 4090", attributes=FREE),
            offer("sold-out", "0.20", gpu="RTX 4090", available=False, attributes=FREE),
            # Spot, which the ranking counts by default: its expected interruptions priced, still the cheapest.
            offer("spot", "0.31", gpu="RTX 4090", pricing=Pricing.spot, attributes=FREE),
        ),
    )


def _mix(tmp_path, runs: float = 1) -> str:
    path = tmp_path / "one-job.json"
    workload = {"name": "ft", "kind": "fine-tune", "job": JOB, "volume": {"runs_per_month": runs}}
    path.write_text(json.dumps({"workloads": [workload]}))
    return str(path)


def _whole_run(price: str, pricing: str) -> Decimal:
    job = JobInput(**JOB)
    spec = job.spec()
    hours = prepare(spec, job.assumptions).on(get_catalog().get("RTX4090-24GB"), 1).hours
    api = {"ingress_usd_per_gb": Decimal(0), "download_mbps": Decimal(1000)}
    return run_cost(Decimal(price), hours, resolve("vastai", pricing, api), plan_for(job, spec)).total


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_the_plan_and_cheapest_pick_the_same_offer_at_the_same_cost(cli, engine, settings, clock, tmp_path):
    _market(engine, settings, clock)
    ranked = cli("cheapest", *CLI_JOB, "--json")
    assert ranked.exit_code == 0, ranked.output
    rows = json.loads(ranked.stdout)
    assert [r["offer_key"] for r in rows] == ["spot", "free-transfer", "cheap-dear-transfer", "sold-out"]
    planned = cli("plan", _mix(tmp_path), "--json")
    assert planned.exit_code == 0, planned.output
    (workload,) = json.loads(planned.stdout)["workloads"]
    choice = workload["choice"]
    assert choice["offer_id"] == rows[0]["offer_id"]
    # One run a month: the month is the ranking's whole-run cost, not $/hour × hours.
    assert Decimal(str(choice["cost_per_run"])) == Decimal(str(rows[0]["cost_per_run"])) == _whole_run("0.31", "spot")
    assert Decimal(str(choice["monthly_cost"])) == Decimal(str(rows[0]["cost_per_run"]))
    # One card in this market: the runner-up is the ranking's second offer.
    assert workload["runner_up"]["offer_id"] == rows[1]["offer_id"]


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_a_month_of_runs_is_the_runs_times_the_whole_run(cli, engine, settings, clock, tmp_path):
    _market(engine, settings, clock)
    (workload,) = json.loads(cli("plan", _mix(tmp_path, runs=10), "--json").stdout)["workloads"]
    assert Decimal(str(workload["choice"]["monthly_cost"])) == money.to_money(10 * _whole_run("0.31", "spot"))


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_v1_plan_picks_v1_rank_s_first_offer(engine, settings, clock):
    from api.app import create_app

    _market(engine, settings, clock)
    with TestClient(create_app(settings, engine)) as client:
        rank = client.post("/v1/rank", json=JOB)
        assert rank.status_code == 200, rank.text
        plan = client.post(
            "/v1/plan",
            json={"workloads": [{"name": "ft", "kind": "fine-tune", "job": JOB, "volume": {"runs_per_month": 1}}]},
        )
        assert plan.status_code == 200, plan.text
    first = rank.json()["rows"][0]
    choice = plan.json()["workloads"][0]["choice"]
    assert (choice["offer_id"], choice["monthly_cost"]) == (first["offer_id"], first["cost_per_run"])
