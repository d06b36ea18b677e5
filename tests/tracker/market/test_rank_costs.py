"""Ranking on the whole run's cost (tracker.costs): the seed's 8B QLoRA job, where a cheap GPU with
expensive data transfer drops and the breakdown says why; `gpu_only` gives GPU time alone."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from providers.adapters.vastai import parse
from providers.contract import Pricing
from providers.cost_terms import COST_TERMS, terms
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tests.factories.real_payloads import real_payload
from tracker import money
from tracker.clock import utcnow
from tracker.costs import plan_for
from tracker.estimate import JobInput, prepare
from tracker.market.rank import RankFilters, RankOptions
from tracker.market.service import rank_offers
from tracker.storage.engine import session_scope

SEED_JOB = JobInput(model="llama-3.1-8b", method="qlora", tokens="22.5M")
CLI_JOB = ("--model", "llama-3.1-8b", "--method", "qlora", "--tokens", "22.5M")
# Vast hosts charging this much per GB downloaded exist (vast-cli's capture tops out at $0.026/GB);
# the 8B job downloads a 10 GB image and 16 GB of weights before it trains.
DEAR_TRANSFER = {
    COST_TERMS: terms(
        ingress_usd_per_gb=Decimal("0.05"), egress_usd_per_gb=Decimal("0.05"), download_mbps=Decimal(1000)
    )
}
FREE_TRANSFER = {
    COST_TERMS: terms(ingress_usd_per_gb=Decimal(0), egress_usd_per_gb=Decimal(0), download_mbps=Decimal(1000))
}


def _rank(engine, settings, now, *, gpu_only: bool, job: JobInput = SEED_JOB, **filters):
    spec = job.spec()
    with session_scope(engine) as s:
        return rank_offers(
            engine,
            s,
            settings,
            now,
            prepare(spec, job.assumptions),
            RankFilters(**filters),
            RankOptions(limit=1000, gpu_only=gpu_only),
            plan=plan_for(job, spec),
        )


@pytest.fixture
def two_hosts(engine, settings):
    clock = FakeClock(utcnow())
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("cheap-dear", "0.30", gpu="RTX 4090", attributes=DEAR_TRANSFER),
            offer("dearer-free", "0.33", gpu="RTX 4090", attributes=FREE_TRANSFER),
        ),
    )
    yield clock


def test_a_cheap_gpu_with_expensive_transfer_drops(engine, settings, two_hosts):
    now = two_hosts()
    gpu = _rank(engine, settings, now, gpu_only=True)["rows"]
    whole = _rank(engine, settings, now, gpu_only=False)["rows"]
    assert [r["offer_key"] for r in gpu] == ["cheap-dear", "dearer-free"]
    assert [r["offer_key"] for r in whole] == ["dearer-free", "cheap-dear"]
    dropped = whole[1]
    # GPU-only is today's figure: $/hour × hours, in both answers.
    assert (
        dropped["gpu_cost_per_run"]
        == gpu[0]["cost_per_run"]
        == gpu[0]["cost"]["components"]["gpu_time"] * 0 + gpu[0]["gpu_cost_per_run"]
    )
    # Why: 26 GB downloaded at $0.05/GB, from the host's own listing.
    parts = dropped["cost"]["components"]
    download_gb = 10 + 16.06  # the image and llama-3.1-8b's bf16 weights, ~16.06 GB
    assert float(parts["ingress"]) == pytest.approx((download_gb + 0.09) * 0.05, rel=0.01)
    assert dropped["cost"]["known"]["ingress"] == "api" and dropped["cost"]["known"]["egress"] == "api"
    extra = {k: v for k, v in parts.items() if k != "gpu_time"}
    assert max(extra, key=lambda k: extra[k]) == "ingress"
    assert dropped["cost_per_run"] == dropped["cost"]["total"]
    assert sum(parts.values()) == pytest.approx(dropped["cost_per_run"], abs=Decimal("0.000006"))


def test_gpu_only_is_todays_figure(engine, settings, two_hosts):
    now = two_hosts()
    with session_scope(engine) as s:
        plain = rank_offers(engine, s, settings, now, prepare(SEED_JOB.spec(), None), RankFilters(), RankOptions())
    gpu = _rank(engine, settings, now, gpu_only=True)
    assert [r["cost_per_run"] for r in gpu["rows"]] == [r["cost_per_run"] for r in plain["rows"]]
    assert gpu["gpu_only"] is True and gpu["plan"]["checkpoints_kept"] == 2


def test_the_seed_job_on_real_vast_bundles(engine, settings):
    """On vast-cli's real capture the order moves, and every move is explained by the components."""
    clock = FakeClock(utcnow())
    do_ingest(engine, settings, clock, parse({"offers": real_payload("vastai/vast-cli_11ecdfa_search_trimmed.json")}))
    now = clock()
    gpu = [r for r in _rank(engine, settings, now, gpu_only=True)["rows"] if r["fits"]]
    whole = [r for r in _rank(engine, settings, now, gpu_only=False)["rows"] if r["fits"]]
    place = {r["offer_id"]: i for i, r in enumerate(whole)}
    assert [r["offer_id"] for r in gpu] != [r["offer_id"] for r in whole]
    beyond = {r["offer_id"]: r["cost_per_run"] - r["gpu_cost_per_run"] for r in whole}
    moved = 0
    for i, a in enumerate(gpu[:40]):
        for b in gpu[i + 1 : 40]:
            if place[a["offer_id"]] > place[b["offer_id"]] and a["cost_per_run"] < b["cost_per_run"]:
                moved += 1  # a was cheaper on GPU time and lost: what it adds beyond GPU time is larger
                assert beyond[a["offer_id"]] > beyond[b["offer_id"]]
    assert moved > 0
    # The real hosts' transfer prices are in the breakdown, known from the API.
    assert any(r["cost"]["components"]["ingress"] > 0 and r["cost"]["known"]["ingress"] == "api" for r in whole)
    spot = [r for r in whole if r["pricing"] == Pricing.spot]
    assert spot and all(
        r["cost"]["spot"]["range"]["low"] <= r["cost_per_run"] <= r["cost"]["spot"]["range"]["high"] for r in spot
    )


def test_cheapest_shows_the_breakdown_and_gpu_only(cli, engine, settings, two_hosts):
    whole = json.loads(cli("cheapest", *CLI_JOB, "--json").stdout)
    gpu = json.loads(cli("cheapest", *CLI_JOB, "--gpu-only", "--json").stdout)
    assert [r["offer_key"] for r in whole] == ["dearer-free", "cheap-dear"]
    assert [r["offer_key"] for r in gpu] == ["cheap-dear", "dearer-free"]
    table = cli("cheapest", *CLI_JOB).stdout
    assert "ingress" in table and "beyond GPU time" in table


def test_rank_api_answers_both(engine, settings, two_hosts):
    from fastapi.testclient import TestClient

    from api.app import create_app

    with TestClient(create_app(settings, engine)) as c:
        body = {"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M"}
        whole = c.post("/v1/rank", json=body).json()
        gpu = c.post("/v1/rank", json=body | {"gpu_only": True}).json()
        history = c.post("/v1/rank/history", json=body | {"gpu": "RTX 4090", "days": 1}).json()
    assert [r["offer_key"] for r in whole["rows"]] == ["dearer-free", "cheap-dear"]
    assert [r["offer_key"] for r in gpu["rows"]] == ["cheap-dear", "dearer-free"]
    assert set(whole["rows"][1]["cost"]["components"]) == {
        "gpu_time",
        "rounding",
        "storage",
        "ingress",
        "egress",
        "interruption",
    }
    (series,) = history["series"]
    point = series["points"][-1]
    assert point["cost_per_run"] > point["gpu_cost_per_run"]


def test_the_cost_band_is_of_the_cost_shown(engine, settings, two_hosts):
    # The band brackets the figure in cost_per_run: the whole run at the band's hours (its transfer is the
    # same at any speed), or GPU time alone with gpu_only; a GPU-time band beside a whole-run cost excluded it.
    now = two_hosts()
    for gpu_only in (False, True):
        for r in _rank(engine, settings, now, gpu_only=gpu_only)["rows"]:
            assert r["cost_per_run_low"] is not None, r
            assert r["cost_per_run_low"] < r["cost_per_run"] < r["cost_per_run_high"], (gpu_only, r)
            extras = r["cost_per_run"] - r["gpu_cost_per_run"]
            assert (extras > 0) is not gpu_only
            # The band's low end is the run at the band's fastest speed: the extras do not shrink with it.
            gpu_low = money.cost(r["price_per_hour"], r["hours_low"])
            assert float(r["cost_per_run_low"] - gpu_low) == pytest.approx(float(extras), abs=0.01)


@pytest.mark.parametrize("limit", [1, 3, 10])
def test_the_first_offers_by_whole_run_cost_are_the_same_however_few_are_asked_for(engine, settings, limit):
    """Only offers whose GPU time alone is within the limit-th best whole-run total are priced in full
    (tracker.market.rank._whole_run_key): the first `limit` rows are still those of the full ordering, on
    real Vast hosts whose transfer prices reorder them (and spot, sold-out and unfit tiers among them)."""
    clock = FakeClock(utcnow())
    do_ingest(engine, settings, clock, parse({"offers": real_payload("vastai/vast-cli_11ecdfa_search_trimmed.json")}))
    spec = SEED_JOB.spec()
    with session_scope(engine) as s:

        def ranked(n: int) -> list[tuple[object, object]]:
            result = rank_offers(
                engine,
                s,
                settings,
                clock(),
                prepare(spec, SEED_JOB.assumptions),
                RankFilters(),
                RankOptions(limit=n, include_unfit=True),
                plan=plan_for(SEED_JOB, spec),
            )
            return [(r["offer_id"], r["cost_per_run"]) for r in result["rows"]]

        everything = ranked(1000)
        assert len(everything) > 4 * limit  # the pruned path is the one taken
        assert ranked(limit) == everything[:limit]
        assert ranked(0) == []  # no row asked for: nothing to price, nothing to fail on
