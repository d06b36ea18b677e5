"""Prime Intellect adapter against its bundled cassette (providers/cassettes/primeintellect.json)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from providers.adapters.primeintellect import PrimeIntellect, availability
from providers.contract import Pricing
from providers.fetching import labelled_aggregated
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_drops,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    mutated_cassette,
    replay,
    replay_fixture,
)

SECRET = "pit_live_0123456789abcdef"
H200 = "nebius:gpu-h200-sxm.8gpu-128vcpu-1600gb:eu-north1:8:secure_cloud"

result = replay_fixture(PrimeIntellect)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H100-PCIE-80GB",
            "RTX4090-24GB",
            "H200-SXM-141GB",
            "MI300X-192GB",
            "A100-PCIE-80GB",
        },
    )
    assert resolved["runpod:NVIDIA H100 PCIe:eu-ro-1:2:secure_cloud"] == "H100-PCIE-80GB"
    assert resolved["runpod:NVIDIA H100 80GB HBM3:us-ks-2:1:secure_cloud"] == "H100-SXM-80GB"
    assert len(result.offers) == 8


def test_second_page_followed_and_spot(result):
    offers = by_key(result)
    on_demand, spot = offers[H200], offers[f"{H200}:spot"]  # both only on page 2
    assert (on_demand.pricing, spot.pricing) == (Pricing.on_demand, Pricing.spot)
    assert spot.price_per_hour == Decimal("12.0") and spot.price_per_gpu_hour == Decimal("1.5")
    assert {o.key for o in result.offers if o.pricing is Pricing.spot} == {f"{H200}:spot"}


def test_price_per_box_and_memory_per_gpu(result):
    box = by_key(result)["lambdalabs:gpu_8x_h100_sxm5:us-east-1:8:secure_cloud"]
    assert box.price_per_hour == Decimal("23.92")  # prices.onDemand covers all 8 GPUs
    assert box.price_per_gpu_hour == Decimal("2.99")
    assert box.gpu_memory_gb == 80  # gpuMemory 640 is the box total
    assert box.gpu_name == "H100 80GB SXM5" and box.attributes["raw_gpu"] == "H100_80GB"
    assert (box.vcpus, box.ram_gb) == (208, 1800)
    assert by_key(result)[H200].gpu_memory_gb == Decimal("141")  # 1128 / 8
    # a per-GPU gpuMemory (80 on a 4-GPU box whose type says 80GB) is not divided again
    a100 = by_key(result)["hyperstack:n3-A100x4:norway-1:4:secure_cloud"]
    assert a100.gpu_memory_gb == 80 and a100.attributes["gpu_memory_field"] == "per_gpu"


def test_stock_status_region_and_community_price(result):
    offers = by_key(result)
    assert offers["runpod:NVIDIA H100 80GB HBM3:us-ks-2:1:secure_cloud"].available is True
    assert offers["lambdalabs:gpu_8x_h100_sxm5:us-east-1:8:secure_cloud"].available is True  # "Low"
    assert offers["runpod:NVIDIA H100 PCIe:eu-ro-1:2:secure_cloud"].available is False
    assert offers["runpod:NVIDIA H100 PCIe:eu-ro-1:2:secure_cloud"].region == "eu-ro-1"
    assert offers["dc_roan:dc_roan_8xMI300X:us:8:secure_cloud"].region == "us"  # no dataCenter: country
    community = offers["runpod:NVIDIA GeForce RTX 4090:ca-mtl-1:1:community_cloud"]
    assert community.price_per_hour == Decimal("0.34") and community.attributes["price_field"] == "communityPrice"
    assert "hyperstack:n3-L40x1: no price" in result.skipped
    assert not any("cpu-16c" in k for k in offers)
    assert [availability(s) for s in ("High", "Medium", "Unavailable", None, "Weird")] == [
        True,
        True,
        False,
        None,
        None,
    ]


def test_bearer_header_and_pages():
    _, seen = fetch_recording(PrimeIntellect, {"PRIME_API_KEY": SECRET})
    assert [r.url.params["page"] for r in seen] == ["1", "2", "2"]  # page 2 once more after its 502
    assert all(r.url.params["page_size"] == "100" for r in seen)
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in seen)


def test_missing_credentials():
    assert_missing_credentials(PrimeIntellect, "PRIME_API_KEY")


def test_flaky_empty_answer_returns_no_offers():
    flaky = json_with(0, value={"items": [], "totalCount": 0})
    empty = replay(PrimeIntellect, mutated_cassette(PrimeIntellect, flaky))
    assert empty.offers == [] and empty.skipped == []  # ingest's quarantine handles the collapse


def test_secret_not_in_errors():
    forbidden = answer(403, json={"detail": "Forbidden"})
    assert_secrets_hidden(PrimeIntellect, {"PRIME_API_KEY": SECRET}, forbidden, status=403)


def test_truncated_json_raises():
    truncated = answer(200, text='{"items": [{"cloudId": "NVIDIA H100', at=0)
    assert_replay_raises(PrimeIntellect, truncated, "invalid JSON")


def test_schema_change_raises():
    assert_replay_drops(PrimeIntellect, json_without(0, "items", 0, "prices"), "prices")


def test_missing_total_count_raises():
    assert_replay_raises(PrimeIntellect, json_without(0, "totalCount"), "totalCount")


def test_repeated_500_raises():
    page_2_fails = answer(500, text="internal", at=(1, 2))
    error = assert_replay_raises(PrimeIntellect, page_2_fails, "gave up after 4 attempts", PRIME_API_KEY=SECRET)
    assert SECRET not in error


def test_upstream_is_the_provider_whose_machine_it_is():
    result = replay(PrimeIntellect)
    upstreams = {o.attributes["upstream_raw"]: o.upstream for o in result.offers}
    assert upstreams["runpod"] == "runpod" and upstreams["lambdalabs"] == "lambdalabs"
    assert upstreams["dc_roan"] is None  # Prime Intellect's own datacenter: not a resale
    assert all("via" not in o.attributes for o in result.offers)  # labelled by fetch_offers, not the parser


def test_fetch_offers_labels_resold_offers_via_the_aggregator():
    labelled = labelled_aggregated(PrimeIntellect, replay(PrimeIntellect))
    resold = [o for o in labelled.offers if o.upstream]
    assert resold and all(o.attributes["via"] == "primeintellect" for o in resold)
    assert all(o.attributes["upstream"] == o.upstream for o in resold)
    own = [o for o in labelled.offers if o.upstream is None]
    assert own and all("via" not in o.attributes and "upstream" not in o.attributes for o in own)


def _box(disk: Mapping[str, object]) -> dict[str, object]:
    return {
        "cloudId": "NVIDIA H100 80GB HBM3",
        "gpuType": "H100_80GB",
        "socket": "SXM5",
        "provider": "runpod",
        "dataCenter": "US-KS-2",
        "gpuCount": 1,
        "gpuMemory": 80,
        "prices": {"onDemand": 2.69, "currency": "USD"},
        "stockStatus": "Available",
        "disk": disk,
    }


def test_a_disk_not_included_in_the_price_is_part_of_the_run_cost():
    from providers.adapters.primeintellect import parse_page
    from tracker.costs.plan import RunPlan
    from tracker.costs.run import run_cost
    from tracker.costs.terms import resolve

    # A real availability item: the default disk is not in the box's price.
    disk = {
        "minCount": 50,
        "defaultCount": 100,
        "maxCount": 2000,
        "pricePerUnit": 0.0001,
        "step": 10,
        "defaultIncludedInPrice": False,
    }
    offer = parse_page({"items": [_box(disk)]}).offers[0]
    assert offer.price_per_hour == Decimal("2.69") + 50 * Decimal("0.0001")  # the least disk, billed hourly
    assert offer.attributes["box_price_per_hour"] == "2.69" and offer.attributes["disk_price_per_hour"] == "0.0050"
    assert offer.attributes["cost_terms"] == {"included_disk_gb": "50", "disk_usd_per_gb_month": "0.0730"}
    included = parse_page({"items": [_box(disk | {"defaultIncludedInPrice": True})]}).offers[0]
    assert included.price_per_hour == Decimal("2.69")
    assert included.attributes["cost_terms"]["included_disk_gb"] == "100"
    # A 10-hour run of a job that needs less disk than the 50 GB minimum still pays for the minimum.
    plan = RunPlan(
        dataset_gb=5,
        model_gb=5,
        image_gb=5,
        checkpoint_gb=1,
        checkpoints_kept=1,
        output_gb=1,
        checkpoint_interval_h=1.0,
    )
    assert plan.disk_gb < 50
    cost = run_cost(
        offer.price_per_hour, 10.0, resolve("primeintellect", "on_demand", offer.attributes["cost_terms"]), plan
    )
    assert cost.components["storage"] == 0  # within the disk already priced in
    bare = run_cost(Decimal("2.69"), 10.0, resolve("primeintellect", "on_demand", {"included_disk_gb": "50"}), plan)
    assert cost.total - bare.total >= Decimal("0.05")  # >= 10 h x 50 GB x $0.0001 (setup hours bill it too)


def test_an_unstated_disk_assumes_nothing():
    from providers.adapters.primeintellect import parse_page

    offer = parse_page({"items": [_box({"minCount": 50, "pricePerUnit": 0.0001})]}).offers[0]
    assert offer.price_per_hour == Decimal("2.69") and "cost_terms" not in offer.attributes
