"""GCP Cloud Billing Catalog adapter against its bundled cassette (providers/cassettes/gcp.json)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.gcp import Gcp, model_of
from providers.contract import Pricing, ProviderError
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    mutated_cassette,
    replay_fixture,
)

SECRET = "AIzaSyD-test-0123456789abcdefghij"


result = replay_fixture(Gcp)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "A100-SXM-40GB", "A100-SXM-80GB", "H100-SXM-80GB", "H200-SXM-141GB", "B200-SXM-180GB",
            "L4-24GB", "T4-16GB", "V100-SXM-16GB",
        },
        allowed_unknown={"P100 PCIe 16GB", "P4 8GB", "K80"},  # not in the GPU catalog
    )  # fmt: skip
    assert resolved["039F-D0DA-4055:us-central1"] == "A100-SXM-40GB"
    assert resolved["F2B9-6C3D-1A58:us-central1"] == "H100-SXM-80GB"  # H100 Mega: same card
    assert len(result.offers) == 28


def test_units_and_nanos_per_gpu_hour(result):
    a100 = by_key(result)["039F-D0DA-4055:us-east1"]
    assert a100.price_per_hour == Decimal("2.933908")  # units "2" + 933908000 nanos
    assert a100.gpu_count == 1 and a100.price_per_gpu_hour == Decimal("2.933908")
    assert a100.attributes["price_scope"] == "gpu_only"  # the host VM is not included
    assert all(o.attributes["price_scope"] == "gpu_only" and o.gpu_count == 1 for o in result.offers)
    # the last tier is the price (the first tier of this SKU is a free allowance)
    assert by_key(result)["2B8D-4F6A-9C13:us-central1"].price_per_hour == Decimal("2.48")


def test_spot_from_usage_type(result):
    offers = by_key(result)
    assert offers["0AB3-3A14-C8D6:us-west1"].pricing is Pricing.spot
    assert offers["0AB3-3A14-C8D6:us-west1"].price_per_hour == Decimal("0.14")
    assert offers["7E2A-1C9B-6F30:europe-west4"].pricing is Pricing.spot  # "Spot Preemptible Nvidia L4 …"
    assert offers["0325-B5D3-8D96:us-west1"].pricing is Pricing.on_demand
    spot_skus = {o.attributes["sku"] for o in result.offers if o.pricing is Pricing.spot}
    assert spot_skus == {"0AB3-3A14-C8D6", "7E2A-1C9B-6F30", "A4D8-2B6C-7E91"}


def test_one_offer_per_sku_and_region_and_second_page(result):
    offers = by_key(result)
    assert {o.region for o in result.offers if o.attributes["sku"] == "0325-B5D3-8D96"} == {
        "us-central1", "us-east1", "us-east4", "us-west1",
    }  # fmt: skip
    h200 = offers["D7A1-3E4F-8B62:us-east4"]  # page 2, after a 429
    assert (h200.gpu_name, h200.gpu_memory_gb) == ("H200 SXM 141GB", 141)
    assert h200.attributes["machine_family"] == "a3-ultragpu"
    assert offers["F2B9-6C3D-1A58:us-central1"].attributes["variant"] == "mega"
    assert all(o.available is None for o in result.offers)


def test_skipped_skus(result):
    skipped = " | ".join(result.skipped)
    for sku in ("9A1B-4E5F-0C1D", "B1C4-55D0-79A2", "4D9F-2C1E-6A83", "3A7C-9E1F-5D24"):
        assert sku in skipped  # commitment, sole tenancy, DWS, virtual workstation
        assert not any(o.attributes["sku"] == sku for o in result.offers)
    assert not any(o.attributes["sku"] == "2E27-4F75-95CD" for o in result.offers)  # CPU core SKU
    assert "2E27-4F75-95CD" not in skipped  # non-GPU SKUs are skipped silently


def test_model_of():
    assert model_of("Nvidia Tesla T4 GPU attached to Spot Preemptible VMs running in Americas") == "T4"
    assert model_of("Nvidia H100 80GB Mega GPU running in Americas") == "H100 80GB Mega"
    assert model_of("Nvidia B200 (1 gpu slice) running in Americas") == "B200"
    assert model_of("N1 Predefined Instance Core running in Americas") is None


def test_api_key_in_query_and_page_token():
    _, seen = fetch_recording(Gcp, {"GCP_API_KEY": SECRET})
    assert len(seen) == 3  # page 1, page 2 answered 429, page 2 again
    assert all(r.url.params["key"] == SECRET and r.url.params["pageSize"] == "5000" for r in seen)
    assert [r.url.params.get("pageToken") for r in seen] == [
        None, "CgsI0sXlygYQ4O2yHxIMMEYxMi1BNDRBLTMwOTk", "CgsI0sXlygYQ4O2yHxIMMEYxMi1BNDRBLTMwOTk",
    ]  # fmt: skip


def test_missing_credentials():
    assert_missing_credentials(Gcp, "GCP_API_KEY")


def test_key_not_in_errors():
    invalid = answer(400, json={"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}})
    assert_secrets_hidden(Gcp, {"GCP_API_KEY": SECRET}, invalid, status=400)
    with pytest.raises(ProviderError, match="invalid JSON") as info:
        fetch_recording(Gcp, {"GCP_API_KEY": SECRET}, mutated_cassette(Gcp, answer(200, text='{"skus": [', at=0)))
    assert SECRET not in str(info.value)


def test_truncated_json_raises():
    truncated = answer(200, text='{"skus": [{"name": "services/6F81-5844-456A/skus/E3C6', at=2)
    assert_replay_raises(Gcp, truncated, "invalid JSON")


def test_schema_change_raises():
    no_tiers = json_without(0, "skus", 1, "pricingInfo", 0, "pricingExpression", "tieredRates")
    assert_replay_raises(Gcp, no_tiers, "tieredRates")


def test_bad_price_raises():
    path = ("skus", 1, "pricingInfo", 0, "pricingExpression", "tieredRates", 0, "unitPrice", "units")
    assert_replay_raises(Gcp, json_with(0, *path, value="two"), "not a number")


def test_repeated_500_raises():
    error = assert_replay_raises(Gcp, answer(500, text="backend error"), "gave up after 4 attempts", GCP_API_KEY=SECRET)
    assert SECRET not in error
