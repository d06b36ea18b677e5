"""Where each cost term comes from: the API, the provider's dated sheet, or a documented default."""

from __future__ import annotations

import math
import re
from decimal import Decimal

import pytest

from providers.spot.aws_advisor import Band
from tracker.costs import DEFAULTS, plan_for, resolve, sheet
from tracker.costs.terms import DEFAULT_SPOT_RATE, TERMS, advisor_rate, host_rate
from tracker.estimate import JobInput


def test_every_sheet_entry_is_dated_and_sourced():
    for provider, entry in sheet().items():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry["checked"]), provider
        assert entry["sources"] and all(u.startswith("https://") for u in entry["sources"]), provider
        assert set(entry) <= {*TERMS, "checked", "sources"}


def test_the_api_wins_over_the_sheet_and_the_sheet_over_the_default():
    terms = resolve("aws", "on_demand", {"egress_usd_per_gb": "0.05"})
    assert terms.number("egress_usd_per_gb") == Decimal("0.05") and terms.sources["egress_usd_per_gb"] == "api"
    assert (
        terms.number("disk_usd_per_gb_month") == Decimal("0.08") and terms.sources["disk_usd_per_gb_month"] == "sheet"
    )
    assert terms.number("download_mbps") == DEFAULTS["download_mbps"] and terms.sources["download_mbps"] == "default"
    unknown = resolve("nowhere", "on_demand")
    assert {unknown.sources[t] for t in TERMS if t != "interruptions_per_hour"} == {"default"}


@pytest.mark.parametrize("bad", ["-1", "NaN", "abc", None])
def test_a_bad_api_value_falls_back(bad):
    assert resolve("aws", "on_demand", {"egress_usd_per_gb": bad}).sources["egress_usd_per_gb"] == "sheet"


def test_interruption_rates():
    assert resolve("vastai", "on_demand").number("interruptions_per_hour") == 0
    spot = resolve("runpod", "spot")
    assert (
        spot.number("interruptions_per_hour") == DEFAULT_SPOT_RATE
        and spot.sources["interruptions_per_hour"] == "default"
    )
    # A Vast host's reliability adds its failure rate: -ln(r) per day.
    vast = resolve("vastai", "spot", reliability=0.9)
    assert float(vast.number("interruptions_per_hour")) == pytest.approx(0.05 - math.log(0.9) / 24)
    assert host_rate(0.0) is None and host_rate(1.5) is None
    # AWS advisor bands (providers.spot.aws_advisor): the band's middle share a month as a Poisson rate.
    mild, worst = Band(0, "<5%", 0.0, 0.05), Band(4, ">20%", 0.20, None)
    assert float(advisor_rate(mild)) == pytest.approx(-math.log(1 - 0.025) / 730)
    assert advisor_rate(mild) < advisor_rate(worst)
    assert resolve("aws", "spot", advisor=worst).sources["interruptions_per_hour"] == "api"


def test_the_job_extras_derive_from_model_and_method():
    qlora = JobInput(model="llama-3.1-8b", method="qlora", tokens="22.5M")
    full = JobInput(model="llama-3.1-8b", method="full", tokens="22.5M")
    small, big = plan_for(qlora, qlora.spec()), plan_for(full, full.spec())
    # An adapter checkpoint is a fraction of a GB; full weights with AdamW state are ~12 bytes a parameter.
    assert small.checkpoint_gb < 1.0 < 90 < big.checkpoint_gb < 110
    assert big.output_gb == pytest.approx(big.model_gb)  # the bf16 weights, as downloaded
    assert small.dataset_gb == pytest.approx(22.5e6 * 4 / 1e9)
    assert small.sources["checkpoint_gb"] == "derived" and small.sources["image_gb"] == "default"
    # Every extra can be set.
    given = JobInput(
        model="llama-3.1-8b",
        tokens="22.5M",
        dataset_gb=3,
        checkpoint_gb=2,
        output_gb=1,
        image_gb=5,
        checkpoints_kept=4,
        setup_minutes=12,
        checkpoint_minutes=15,
        restart_minutes=3,
        deadline_hours=8,
    )
    plan = plan_for(given, given.spec())
    assert (plan.dataset_gb, plan.checkpoint_gb, plan.output_gb, plan.image_gb, plan.checkpoints_kept) == (
        3,
        2,
        1,
        5,
        4,
    )
    assert (plan.setup_h, plan.checkpoint_interval_h, plan.restart_h, plan.deadline_h) == (0.2, 0.25, 0.05, 8)
    assert {plan.sources[k] for k in ("dataset_gb", "checkpoint_gb", "output_gb", "image_gb", "setup_minutes")} == {
        "set"
    }
