"""Akamai Cloud (Linode) adapter against its bundled cassette (providers/cassettes/linode.json)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.linode import URL, Linode, model_of, parse_page
from providers.contract import Pricing, ProviderKind
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)

result = replay_fixture(Linode)


def test_integrity(result):
    resolved = assert_integrity(
        result, expected_gpus={"QRTX6000-24GB", "RTX4000ADA-20GB", "RTXPRO6000-96GB"}, provider="linode"
    )
    assert resolved["g3-gpu-rtxpro6000-blackwell-1"] == "RTXPRO6000-96GB"
    assert sorted(by_key(result)) == [
        "g1-gpu-rtx6000-1",
        "g1-gpu-rtx6000-2",
        "g1-gpu-rtx6000-2:id-cgk",
        "g2-gpu-rtx4000a1-s",
        "g2-gpu-rtx4000a2-s",
        "g2-gpu-rtx4000a4-m",
        "g3-gpu-rtxpro6000-blackwell-1",
    ]
    assert Linode.kind == ProviderKind.cloud and Linode.credentials == ()


def test_plan_price_is_per_instance_hour_in_usd(result):
    plan = by_key(result)["g2-gpu-rtx4000a4-m"]
    assert (plan.gpu_name, plan.gpu_count, plan.price_per_hour, plan.price_per_gpu_hour) == (
        "RTX 4000 Ada",
        4,
        Decimal("2.08"),
        Decimal("0.52"),
    )
    assert (plan.currency, plan.pricing, plan.region, plan.available) == ("USD", Pricing.on_demand, "", None)
    # memory and disk are MB
    assert (plan.vcpus, plan.ram_gb, plan.gpu_memory_gb, plan.attributes["disk_gb"]) == (24, 64, 20, "2000")
    assert plan.attributes["monthly_cap"] == "1392"


def test_regional_price_is_its_own_offer(result):
    base, jakarta = by_key(result)["g1-gpu-rtx6000-2"], by_key(result)["g1-gpu-rtx6000-2:id-cgk"]
    assert (base.price_per_gpu_hour, base.region) == (Decimal("1.5"), "")
    assert (jakarta.price_per_gpu_hour, jakarta.region, jakarta.gpu_name) == (
        Decimal("1.8"),
        "id-cgk",
        "Quadro RTX 6000",
    )
    assert jakarta.attributes["monthly_cap"] == "2400" and jakarta.attributes["regional_price"] is True


def test_cpu_plans_and_vpus_are_left_out_and_odd_plans_dropped_with_a_reason(result):
    assert not any("netint" in o.key or "standard" in o.key for o in result.offers)
    assert result.skipped == [
        "g9-gpu-mystery-1: no known GPU model in the plan id ('Dedicated + Future GPU x1')",
        "data[9]: schema changed: 'n/a' at data[9].price.hourly is not a number",
    ]
    odd = parse_page({"data": ["x", {"id": "g1-gpu-rtx6000-1", "class": "gpu", "gpus": 1}]})
    assert odd.offers == [] and odd.skipped == [
        "data[0]: not an object",
        "data[1]: schema changed: field 'price' missing at data[1]",
    ]


@pytest.mark.parametrize(
    ("type_id", "model"),
    [
        ("g1-gpu-rtx6000-3", ("Quadro RTX 6000", 24)),
        ("g2-gpu-rtx4000a2-hs", ("RTX 4000 Ada", 20)),
        ("g3-gpu-rtxpro6000-blackwell-4", ("RTX PRO 6000 Blackwell", 96)),
        ("g1-accelerated-netint-vpu-t1u8-s", None),
    ],
)
def test_model_of(type_id, model):
    assert model_of(type_id) == model


def test_one_anonymous_request():
    _, requests = fetch_recording(Linode)
    assert [r.url.path for r in requests] == ["/v4/linode/types"] and str(requests[0].url).startswith(URL)
    assert "authorization" not in requests[0].headers


def test_schema_changes_raise():
    assert_replay_raises(Linode, json_without(0, "data"), "'data'")
    assert_replay_raises(Linode, json_with(0, "data", value={}), "not a list")
    assert_replay_raises(Linode, json_with(0, "pages", value=99), "more than the 20")
    assert_replay_raises(Linode, answer(500, text="oops"), "HTTP 500")
