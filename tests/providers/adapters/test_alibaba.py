"""Alibaba Cloud adapter against its bundled cassette (providers/cassettes/alibaba.json), and the RPC signature
against Alibaba's documented example."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.alibaba import (
    INSTANCE_TYPES,
    REGIONS,
    AlibabaCloud,
    parse_spot_history,
    percent_encode,
    rpc_signature,
)
from providers.contract import Pricing
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    replay_fixture,
)

CREDS = {"ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAItestkeyid0123", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "ali-secret-9f8e7d6c"}

result = replay_fixture(AlibabaCloud)


def test_signature_matches_the_documented_example():
    # Alibaba's signature example: DescribeRegions with AccessKey testid / testsecret.
    params = {
        "TimeStamp": "2016-02-23T12:46:24Z",
        "Format": "XML",
        "AccessKeyId": "testid",
        "Action": "DescribeRegions",
        "SignatureMethod": "HMAC-SHA1",
        "SignatureNonce": "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf",
        "Version": "2014-05-26",
        "SignatureVersion": "1.0",
    }
    assert rpc_signature(params, "testsecret") == "CT9X0VtwR86fNWSnsc6v8YGOjuE="
    assert (percent_encode("a b*~"), percent_encode("12:46")) == ("a%20b%2A~", "12%3A46")


def test_integrity(result):
    resolved = assert_integrity(
        result, expected_gpus={"T4-16GB", "V100-SXM-16GB", "A10-24GB", "A100-SXM-80GB", "L20-48GB"}
    )
    assert resolved["cn-shanghai:ecs.gn7e-c16g1.4xlarge"] == "A100-SXM-80GB"
    assert len(result.offers) == 25


def test_instance_price_in_cny_without_the_disk(result):
    a10 = by_key(result)["cn-hangzhou:ecs.gn7i-c32g1.32xlarge"]
    assert (a10.gpu_count, a10.price_per_hour, a10.currency, a10.pricing) == (
        4,
        Decimal("52.64"),
        "CNY",
        Pricing.on_demand,
    )
    assert a10.price_per_gpu_hour == Decimal("13.16") and a10.attributes["price_scope"] == "instance"
    assert a10.attributes["original_price"] == "53.42"  # instance + system disk, not what we keep
    assert (a10.region, a10.available) == ("cn-hangzhou", None)


def test_spot_from_the_latest_history_point_per_zone(result):
    spot = by_key(result)["cn-hangzhou-i:ecs.gn6i-c4g1.xlarge:spot"]
    assert (spot.pricing, spot.price_per_hour, spot.currency, spot.region) == (
        Pricing.spot,
        Decimal("2.25"),
        "CNY",
        "cn-hangzhou-i",
    )
    assert spot.attributes["history_points"] == 2
    assert (spot.attributes["history_low"], spot.attributes["history_high"]) == ("2.25", "2.31")
    assert spot.attributes["spot_price_at"] == "2026-12-01T08:00:00Z"
    assert by_key(result)["cn-hangzhou-j:ecs.gn6i-c4g1.xlarge:spot"].price_per_hour == Decimal("1.98")
    usd = parse_spot_history(
        {
            "Currency": "USD",
            "SpotPrices": {
                "SpotPriceType": [{"ZoneId": "ap-southeast-1a", "Timestamp": "2026-12-01T00:00:00Z", "SpotPrice": 0.3}]
            },
        },
        "ap-southeast-1",
        "ecs.gn6i-c4g1.xlarge",
    )
    assert usd[0].currency == "USD"


def test_not_sold_and_malformed_answers_are_skipped(result):
    assert "cn-beijing:ecs.gn8is.2xlarge on demand: not sold (InvalidInstanceType.ValueNotSupported)" in result.skipped
    assert "cn-shanghai:ecs.gn8is.2xlarge: price without a currency" in result.skipped
    assert "cn-hangzhou:ecs.gn7i-c32g1.32xlarge spot: no price in the answer" in result.skipped


def test_every_request_is_signed():
    _, seen = fetch_recording(AlibabaCloud, CREDS)
    assert len(seen) == len(REGIONS) * len(INSTANCE_TYPES) * 2
    for sent in seen:
        params = dict(sent.url.params)
        signature = params.pop("Signature")
        assert signature == rpc_signature(params, CREDS["ALIBABA_CLOUD_ACCESS_KEY_SECRET"])
        assert params["AccessKeyId"] == CREDS["ALIBABA_CLOUD_ACCESS_KEY_ID"] and params["Format"] == "JSON"
    assert len({r.url.params["SignatureNonce"] for r in seen}) == len(seen)  # a fresh nonce each
    assert CREDS["ALIBABA_CLOUD_ACCESS_KEY_SECRET"] not in " ".join(str(r.url) for r in seen)


def test_missing_credentials():
    assert_missing_credentials(AlibabaCloud, "ALIBABA_CLOUD_ACCESS_KEY_ID")
    assert_missing_credentials(AlibabaCloud, "ALIBABA_CLOUD_ACCESS_KEY_SECRET", ALIBABA_CLOUD_ACCESS_KEY_ID="LTAI")


def test_auth_errors_fail_the_run_without_the_secret():
    rejected = answer(400, json={"Code": "SignatureDoesNotMatch", "Message": CREDS["ALIBABA_CLOUD_ACCESS_KEY_SECRET"]})
    message = assert_secrets_hidden(AlibabaCloud, CREDS, rejected, status=400)
    assert "SignatureDoesNotMatch" in message
