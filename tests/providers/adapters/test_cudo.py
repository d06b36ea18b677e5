"""CUDO Compute adapter against its bundled cassette (providers/cassettes/cudo.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.cudo import URL, Cudo, gpu_name, parse
from providers.contract import Pricing, ProviderKind
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_drops,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_without,
    replay_fixture,
)

result = replay_fixture(Cudo)

# Rows of SkyPilot's published CUDO catalog (skypilot-catalog@113567a7:catalogs/v8/cudo/vms.csv), priced by its
# fetcher from the live API as GPU + vCPU + memory for the same 1×(4 vCPU, 8 GiB) and 2×(8 vCPU, 16 GiB) shapes.
PUBLISHED = {
    "ca-montreal-3:ice-lake-a40-compute": ("0.3896", "0.7792"),
    "ca-montreal-3:sapphire-rapids-h100": ("2.5708", "5.1416"),
    "no-kristiansand-1:epyc-genoa-a100-pcie": ("1.5588", "3.1176"),
    "no-kristiansand-1:epyc-genoa-l40s-graphics": ("0.9288", "1.8576"),
    "se-stockholm-1:ice-lake-rtx-a6000": ("0.4896", "0.9792"),
    "us-carlsbad-1:intel-ice-lake-a800-pci": ("0.8468", "1.6936"),
    "us-newyork-1:intel-broadwell-v100": ("0.23", "0.46"),
}


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "A40-48GB",
            "RTXA5000-24GB",
            "H100-SXM-80GB",
            "A100-PCIE-80GB",
            "L40S-48GB",
            "RTXA6000-48GB",
        },
        # CUDO's bare "V100" names no memory or form factor; the A800 is not in the catalog: never guessed
        allowed_unknown={"V100"},  # no memory or form factor stated: PCIe or SXM, 16 or 32 GB cannot be told
        provider="cudo",
    )
    assert resolved["ca-montreal-3:sapphire-rapids-h100:8"] == "H100-SXM-80GB"
    assert len(result.offers) == 33
    assert all(o.pricing is Pricing.on_demand for o in result.offers)


def test_price_is_the_sum_of_the_parts(result):
    one = by_key(result)["ca-montreal-3:ice-lake-rtx-a5000:1"]
    # 1 GPU × 0.29 + 4 vCPU × 0.0045 + 8 GiB × 0.0027 (disk and IPv4 extra)
    assert one.price_per_hour == Decimal("0.29") + 4 * Decimal("0.0045") + 8 * Decimal("0.0027")
    assert (one.vcpus, one.ram_gb, one.region) == (4, 8, "ca-montreal-3")
    assert one.attributes["storage_gib_price_per_hour"] == "0.00011"
    assert one.attributes["ipv4_price_per_hour"] == "0.005"
    assert one.attributes["gpu_price_per_hour"] == "0.29"


def test_prices_match_the_published_catalog(result):
    offers = by_key(result)
    for base, (one, two) in PUBLISHED.items():
        assert offers[f"{base}:1"].price_per_hour == Decimal(one), base
        assert offers[f"{base}:2"].price_per_hour == Decimal(two), base


def test_vcpu_bounds_of_the_type_are_kept():
    row = {
        "dataCenterId": "x-1",
        "machineType": "m",
        "gpuModel": "H100 SXM",
        "gpuPriceHr": {"value": "2"},
        "vcpuPriceHr": {"value": "0.01"},
        "memoryGibPriceHr": {"value": "0"},
        "maxGpuFree": 1,
    }
    assert parse({"machineTypes": [row | {"minVcpuPerGpu": 12}]}).offers[0].vcpus == 12
    assert parse({"machineTypes": [row | {"maxVcpuPerGpu": 2}]}).offers[0].vcpus == 2


def test_counts_follow_free_gpus(result):
    offers = by_key(result)
    assert {k for k in offers if k.startswith("no-kristiansand-1:epyc-genoa-a100-pcie:")} == {
        "no-kristiansand-1:epyc-genoa-a100-pcie:1",
        "no-kristiansand-1:epyc-genoa-a100-pcie:2",
    }
    sold_out = offers["no-kristiansand-1:sapphire-rapids-h100:1"]  # maxGpuFree 0: kept, not available
    assert sold_out.available is False
    assert "no-kristiansand-1:sapphire-rapids-h100:2" not in offers
    assert offers["ca-montreal-3:sapphire-rapids-h100:8"].available is True


def test_mode_suffix_moves_to_attributes(result):
    assert gpu_name("L40S (compute mode)") == ("L40S", "compute")
    assert gpu_name("A40 (Graphics Mode)") == ("A40", "graphics")
    assert gpu_name("H100 SXM") == ("H100 SXM", None)
    l40s = by_key(result)["no-kristiansand-1:epyc-genoa-l40s-graphics:1"]
    assert (l40s.gpu_name, l40s.attributes["gpu_mode"], l40s.attributes["raw_gpu"]) == (
        "L40S",
        "graphics",
        "L40S (graphics mode)",
    )


def test_odd_rows_dropped_with_reason(result):
    assert "us-santaclara-1:epyc-rome-rtx-a4000: no GPU price" in result.skipped
    assert not any(":ice-lake:" in k for k in by_key(result))  # CPU-only type ignored
    row = {
        "dataCenterId": "x-1",
        "machineType": "m",
        "gpuModel": "H100 SXM",
        "gpuPriceHr": {"value": "2"},
        "vcpuPriceHr": {"value": "0"},
        "memoryGibPriceHr": {"value": "0"},
    }
    twice = parse({"machineTypes": [row, row]})
    assert twice.skipped == ["x-1:m: listed twice"]
    assert [o.available for o in twice.offers] == [None]  # no free count: only the 1-GPU shape, unknown


def test_public_endpoint_no_credentials():
    assert Cudo.credentials == () and Cudo.kind is ProviderKind.cloud
    _, seen = fetch_recording(Cudo)
    assert [str(r.url) for r in seen] == [URL]


def test_schema_change_raises():
    assert_replay_drops(Cudo, json_without(0, "machineTypes", 0, "gpuPriceHr"), "gpuPriceHr")
    assert_replay_raises(Cudo, json_without(0, "machineTypes"), "machineTypes")


def test_repeated_500_raises():
    assert_replay_raises(Cudo, answer(503, text="unavailable"), "gave up after 4 attempts")
