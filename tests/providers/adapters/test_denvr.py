"""Denvr Dataworks adapter against its bundled cassette (providers/cassettes/denvr.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.denvr import AUTH_URL, Denvr, gpu_name
from providers.contract import Pricing
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
    replay_fixture,
)

CREDS = {"DENVR_USERNAME": "ops@example.test", "DENVR_PASSWORD": "pw-Denvr-8c7b6a"}

result = replay_fixture(Denvr)


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"A100-SXM-80GB", "H100-SXM-80GB", "A100-PCIE-40GB"})
    assert resolved["hou1:on-demand:H100_80GB_SXM_8x"] == "H100-SXM-80GB"
    assert len(result.offers) == 5  # cpu_8x left out


def test_per_gpu_price_times_gpus(result):
    h100 = by_key(result)["hou1:on-demand:H100_80GB_SXM_8x"]
    assert (h100.gpu_count, h100.price_per_hour, h100.currency, h100.pricing) == (
        8,
        Decimal("17.20"),
        "USD",
        Pricing.on_demand,
    )
    assert h100.price_per_gpu_hour == Decimal("2.15") and h100.region == "hou1"
    a100 = by_key(result)["hou1:on-demand:A100_80GB_SXM_1x"]
    assert (a100.vcpus, a100.ram_gb, a100.gpu_memory_gb) == (24, 116, 80)
    assert by_key(result)["msc1:on-demand:A100_80GB_SXM_8x"].price_per_gpu_hour == Decimal("1.29")  # the row's price


def test_infiniband_kept(result):
    a100 = by_key(result)["hou1:on-demand:A100_80GB_SXM_1x"].attributes
    assert (a100["compute_network"], a100["infiniband"]) == ("IB 1600G", True)
    assert by_key(result)["msc1:on-demand:A100_40GB_PCIe_1x"].attributes["infiniband"] is False


def test_availability_needs_a_creatable_count(result):
    offers = by_key(result)
    assert offers["hou1:on-demand:A100_80GB_SXM_1x"].available is True
    assert offers["hou1:on-demand:A100_80GB_SXM_8x"].available is False  # available: true but count 0
    assert offers["msc1:on-demand:A100_80GB_SXM_8x"].available is False


def test_malformed_rows_dropped_with_reason(result):
    assert any("broken_1x" in s for s in result.skipped)
    assert any("Msc1[2]" in s and "configuration" in s for s in result.skipped)


def test_gpu_name():
    assert gpu_name({"text_name": "A100 80GB SXM"}) == "A100 80GB SXM"
    assert gpu_name({"name": "H100_80GB_SXM_8x"}) == "H100 80GB SXM"


def test_login_then_bearer_and_clusters_deduplicated():
    _, seen = fetch_recording(Denvr, CREDS)
    assert str(seen[0].url) == AUTH_URL and seen[0].method == "POST"
    assert CREDS["DENVR_PASSWORD"] in seen[0].content.decode()
    assert all(r.headers["authorization"] == "Bearer <redacted>" for r in seen[1:])
    clusters = [r.url.params["cluster"] for r in seen if "GetAvailability" in str(r.url)]
    assert clusters == ["Hou1", "Msc1"]


def test_missing_credentials():
    assert_missing_credentials(Denvr, "DENVR_USERNAME")
    assert_missing_credentials(Denvr, "DENVR_PASSWORD", DENVR_USERNAME="ops@example.test")


def test_secrets_not_in_errors():
    echoed = answer(401, json={"error": {"message": f"bad login {CREDS['DENVR_PASSWORD']}"}}, at=0)
    assert_secrets_hidden(Denvr, CREDS, echoed, status=401)


def test_envelope_change_fails_the_run():
    assert_replay_raises(Denvr, json_without(0, "result", "accessToken"), "accessToken")
    assert_replay_raises(Denvr, json_with(2, "result", value={"total": 3}), "items")
    assert_replay_raises(Denvr, json_without(3, "result"), "result")
