"""Tencent Cloud adapter against its bundled cassette (providers/cassettes/tencent.json), and the TC3-HMAC-SHA256
signature against Tencent's documented example."""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal

import pytest

from providers.adapters.tencent import REGIONS, TencentCloud, parse_region, request_body, tc3_authorization
from providers.contract import Pricing, ProviderError, ScrapeResult
from tests.factories.cassettes import (
    assert_integrity,
    assert_missing_credentials,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    replay,
    replay_fixture,
)

CREDS = {"TENCENTCLOUD_SECRET_ID": "AKIDtest0123456789", "TENCENTCLOUD_SECRET_KEY": "tc-secret-key-5a4b3c"}

result = replay_fixture(TencentCloud)


def test_signature_matches_the_documented_example():
    # Tencent's signature v3 page: DescribeInstances in ap-guangzhou at 1551113065 with this exact body.
    payload = b'{"Limit": 1, "Filters": [{"Values": ["\\u672a\\u547d\\u540d"], "Name": "instance-name"}]}'
    assert hashlib.sha256(payload).hexdigest() == "35e9c5b0e3ae67532d3c9f17ead6c90222632e5b1ff7f6e89887f1398934f064"
    header = tc3_authorization(
        "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE",
        "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE",
        timestamp=1551113065,
        payload=payload,
    )
    assert header == (
        "TC3-HMAC-SHA256 Credential=AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE/2019-02-25/cvm/tc3_request, "
        "SignedHeaders=content-type;host, "
        "Signature=72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168"
    )


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"T4-16GB", "A10-24GB", "A100-SXM-40GB", "V100-SXM-32GB"})
    assert resolved["ap-shanghai-5:GT4.41XLARGE948"] == "A100-SXM-40GB"
    assert len(result.offers) == 11


def test_cny_per_instance_hour_on_demand_and_spot(result):
    offers = by_key(result)
    t4 = offers["ap-guangzhou-3:GN7.2XLARGE32"]
    assert (t4.gpu_count, t4.price_per_hour, t4.currency, t4.pricing) == (1, Decimal("8.68"), "CNY", Pricing.on_demand)
    assert (t4.region, t4.vcpus, t4.ram_gb, t4.available) == ("ap-guangzhou-3", 8, 32, True)
    spot = offers["ap-guangzhou-3:GN7.2XLARGE32:spot"]
    assert (spot.pricing, spot.price_per_hour, spot.currency) == (Pricing.spot, Decimal("1.74"), "CNY")
    a100 = offers["ap-shanghai-5:GT4.41XLARGE948"]
    assert (a100.gpu_count, a100.price_per_gpu_hour) == (8, Decimal("30.65"))
    assert offers["ap-beijing-7:PNV4.7XLARGE116"].price_per_hour == Decimal("11.11")  # the discounted rate charged
    assert not any(o.instance_type == "GN7.2XLARGE32" and o.pricing is Pricing.reserved for o in result.offers)


def test_vgpu_share_and_stock(result):
    slice_ = by_key(result)["ap-guangzhou-6:GNV4.2XLARGE32"]
    assert (slice_.gpu_count, slice_.gpu_memory_gb, slice_.gpu_name) == (Decimal("0.25"), 6, "A10 24GB")
    assert by_key(result)["ap-guangzhou-4:GN7.2XLARGE32"].available is False  # SOLD_OUT


def test_malformed_row_dropped_with_reason(result):
    assert any("Price" in s and "InstanceTypeQuotaSet[6]" in s for s in result.skipped)
    odd = ScrapeResult()
    row = {"Zone": "ap-x-1", "InstanceType": "GN8.LARGE56", "InstanceFamily": "GN8", "InstanceChargeType": "SPOTPAID"}
    parse_region({"Response": {"InstanceTypeQuotaSet": [row]}}, "ap-x", "CNY", odd, set())
    assert not odd.offers and "no known card" in odd.skipped[0]


def test_signed_request_per_region():
    _, seen = fetch_recording(TencentCloud, CREDS)
    assert [r.headers["x-tc-region"] for r in seen] == list(REGIONS)
    first = seen[0]
    assert first.content == request_body() and json.loads(first.content)["Filters"][0]["Name"] == "instance-family"
    assert first.headers["x-tc-action"] == "DescribeZoneInstanceConfigInfos"
    assert first.headers["x-tc-version"] == "2017-03-12"
    expected = tc3_authorization(
        CREDS["TENCENTCLOUD_SECRET_ID"],
        CREDS["TENCENTCLOUD_SECRET_KEY"],
        timestamp=int(first.headers["x-tc-timestamp"]),
        payload=first.content,
    )
    assert first.headers["authorization"] == expected and CREDS["TENCENTCLOUD_SECRET_KEY"] not in str(first.headers)
    assert first.headers["content-type"] == "application/json; charset=utf-8"


def test_international_account_in_usd():
    usd = replay(TencentCloud, TENCENTCLOUD_CURRENCY="usd")
    assert {o.currency for o in usd.offers} == {"USD"}
    with pytest.raises(ProviderError, match="ISO 4217"):
        replay(TencentCloud, TENCENTCLOUD_CURRENCY="yuan")


def test_missing_credentials():
    assert_missing_credentials(TencentCloud, "TENCENTCLOUD_SECRET_ID")
    assert_missing_credentials(TencentCloud, "TENCENTCLOUD_SECRET_KEY", TENCENTCLOUD_SECRET_ID="AKIDtest")


def test_api_error_fails_the_run():
    error = {
        "Response": {
            "Error": {"Code": "AuthFailure.SignatureFailure", "Message": "signature mismatch"},
            "RequestId": "r",
        }
    }
    assert_replay_raises(TencentCloud, json_with(0, value=error), "AuthFailure.SignatureFailure")
    assert_replay_raises(TencentCloud, json_with(1, "Response", value={"RequestId": "r"}), "InstanceTypeQuotaSet")
