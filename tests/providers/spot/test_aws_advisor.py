"""AWS Spot Instance Advisor: the docs-built cassette replays offline; bands parse from their labels;
a changed schema is a ProviderError, never a guess."""

from __future__ import annotations

import asyncio
import math
from decimal import Decimal

import httpx
import pytest

from providers.cassette import Cassette, ReplayTransport
from providers.contract import FetchContext, ProviderError
from providers.spot.aws_advisor import AdvisorData, bundled_cassette, fetch, parse
from tracker.costs import RunPlan, resolve, run_cost


def _replayed() -> AdvisorData:
    async def go() -> AdvisorData:
        transport = ReplayTransport(Cassette.load(bundled_cassette()))
        async with httpx.AsyncClient(transport=transport, timeout=5) as client:
            return await fetch(FetchContext(client=client, retries=0, backoff_base_s=0))

    return asyncio.run(go())


def test_the_cassette_replays_and_bands_read_from_labels():
    data = _replayed()
    assert [(b.label, b.low, b.high) for b in data.bands.values()] == [
        ("<5%", 0.0, 0.05),
        ("5-10%", 0.05, 0.10),
        ("10-15%", 0.10, 0.15),
        ("15-20%", 0.15, 0.20),
        (">20%", 0.20, None),
    ]
    p4d, g5 = data.band("us-east-1", "p4d.24xlarge"), data.band("us-east-1", "g5.xlarge")
    assert p4d is not None and g5 is not None
    assert p4d.label == "15-20%"
    assert g5.label == "5-10%"  # Linux, not the Windows pool
    assert data.band("eu-west-1", "p4d.24xlarge") is None


def test_a_band_is_a_poisson_rate_and_drives_the_expected_cost():
    data = _replayed()
    mild, worst = (resolve("aws", "spot", advisor=data.band("us-east-1", t)) for t in ("g6.xlarge", "p5.48xlarge"))
    assert mild.sources["interruptions_per_hour"] == "api"
    assert float(mild.number("interruptions_per_hour")) == pytest.approx(-math.log(1 - 0.025) / 730)
    assert float(worst.number("interruptions_per_hour")) == pytest.approx(-math.log(1 - 0.25) / 730)
    plan = RunPlan(
        dataset_gb=0,
        model_gb=0,
        image_gb=0,
        checkpoint_gb=0,
        checkpoints_kept=0,
        output_gb=0,
        checkpoint_interval_h=1.0,
        setup_h=0.1,
        restart_h=0.1,
    )
    costs = [run_cost(Decimal("30"), 10.0, t, plan).components["interruption"] for t in (mild, worst)]
    assert 0 < costs[0] < costs[1]


@pytest.mark.parametrize(
    "payload, match",
    [
        ({"spot_advisor": {}}, "'ranges' missing"),
        ({"ranges": [], "spot_advisor": {}}, "non-empty"),
        ({"ranges": [{"index": 0, "label": "low"}], "spot_advisor": {}}, "band label"),
        ({"ranges": [{"index": 0, "label": "<5%"}], "spot_advisor": []}, "not an object"),
    ],
)
def test_a_changed_schema_is_an_error(payload, match):
    with pytest.raises(ProviderError, match=match):
        parse(payload)


def test_pools_with_unknown_bands_are_left_out():
    pools = {"us-east-1": {"Linux": {"g5.xlarge": {"r": 7}, "g6.xlarge": {"r": 0}}}}
    data = parse({"ranges": [{"index": 0, "label": "<5%"}], "spot_advisor": pools})
    assert data.pools == {("us-east-1", "g6.xlarge"): 0}
