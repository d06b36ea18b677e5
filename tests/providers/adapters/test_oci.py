"""OCI Cost Estimator adapter against its bundled schema-faithful cassette."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from providers.adapters.oci import DERIVED, PRODUCTS_URL, SHAPES_URL, Oci, gpu_model, parse, split_shape
from providers.cassette import bundled_cassette
from providers.contract import Pricing, ProviderKind, ScrapeResult
from providers.registry import get_provider
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_drops,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
    resolve_all,
)
from tests.factories.real_payloads import real_payload

SHAPES, PRODUCTS = 0, 2  # interaction indexes (1 is the recorded 429 for products.json)
REAL_CPU_SHAPES = "oci/gpuhunt_8d0bcc7_shapes_cpu_excerpt.json"  # real estimator CPU shapes, fractional qty


result = replay_fixture(Oci)


@pytest.fixture(scope="module")
def offers(result: ScrapeResult) -> dict[str, Any]:
    return by_key(result)


def test_registered_without_credentials() -> None:
    assert get_provider("oci") is Oci
    assert Oci.credentials == ()
    assert Oci.kind is ProviderKind.cloud


def test_integrity(result: ScrapeResult) -> None:
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H200-SXM-141GB",
            "A100-SXM-80GB",
            "A100-SXM-40GB",
            "L40S-48GB",
            "MI300X-192GB",
            "A10-24GB",
            "V100-SXM-16GB",
            "GB200-186GB",
            "GB300-288GB",
        },
        allowed_unknown={"P100 16GB"},
        min_offers=15,
    )
    assert resolved["BM.GPU4.8:on_demand"] == "A100-SXM-40GB"
    assert resolved["BM.GPU.A100-v2.8:on_demand"] == "A100-SXM-80GB"
    assert resolved["BM.GPU.GB200.4 (NVL72):on_demand"] == "GB200-186GB"
    assert resolved["BM.GPU.GB300.4 (NVL72):on_demand"] == "GB300-288GB"
    assert len(result.offers) == 15


def test_per_gpu_part_times_gpu_qty(offers: dict[str, Any]) -> None:
    h100 = offers["BM.GPU.H100.8:on_demand"]
    assert h100.price_per_hour == Decimal(80)
    assert h100.price_per_gpu_hour == Decimal(10)
    assert (h100.gpu_name, h100.gpu_count, h100.gpu_memory_gb) == ("H100 SXM 80GB", Decimal(8), Decimal(80))
    assert h100.instance_type == "BM.GPU.H100.8"
    assert h100.ram_gb == Decimal(2048)
    assert offers["BM.GPU4.8:on_demand"].price_per_hour == Decimal("24.40")
    assert offers["BM.GPU.L40S.4:on_demand"].price_per_hour == Decimal(14)


def test_float_quantities(offers: dict[str, Any]) -> None:
    h200 = offers["BM.GPU.H200.8:on_demand"]  # gpuQty 8.0, bundleMemoryQty 3072.0
    assert h200.gpu_count == Decimal(8) and str(h200.gpu_count) == "8"
    assert h200.ram_gb == Decimal(3072)
    a10 = offers["VM.GPU.A10.1:on_demand"]  # gpuQty 1.0
    assert (a10.gpu_count, a10.price_per_hour) == (Decimal(1), Decimal(2))


def test_preemptible_is_derived_half_price(result: ScrapeResult, offers: dict[str, Any]) -> None:
    spot = offers["VM.GPU.A10.1:spot"]
    assert spot.pricing is Pricing.spot
    assert spot.price_per_hour == Decimal(1)
    assert spot.attributes["derived_price"] == DERIVED
    assert offers["VM.GPU3.1:spot"].price_per_hour == Decimal("1.475")
    spot_keys = {o.key for o in result.offers if o.pricing is Pricing.spot}
    assert spot_keys == {"BM.GPU.A10.4:spot", "VM.GPU.A10.1:spot", "VM.GPU3.1:spot"}  # allowPreemptible only
    assert all("derived_price" not in o.attributes for o in result.offers if o.pricing is Pricing.on_demand)


def test_region_unknown_and_availability(result: ScrapeResult) -> None:
    assert {o.region for o in result.offers} == {""}
    assert {o.available for o in result.offers} == {None}


def test_skipped_shapes(result: ScrapeResult, offers: dict[str, Any]) -> None:
    assert not any(k.startswith(("BM.Standard", "VM.Standard")) for k in offers)  # CPU shapes
    assert "BM.GPU.B4.8:on_demand" not in offers  # hidden
    assert sorted(result.skipped) == [
        "BM.GPU.B200.8: part B99999 has no USD pay-as-you-go price",
        "BM.GPU2.2: part B88518 is billed 'OCPU Per Hour', not per GPU",
    ]


def test_requests_and_429_retry() -> None:
    result, requests = fetch_recording(Oci)
    assert len(result.offers) == 15
    assert [str(r.url) for r in requests] == [SHAPES_URL, PRODUCTS_URL, PRODUCTS_URL]
    assert all("authorization" not in r.headers for r in requests)


def test_shapes_with_a_display_suffix(offers: dict[str, Any]) -> None:
    gb300 = offers["BM.GPU.GB300.4 (NVL72):on_demand"]
    assert (gb300.gpu_name, gb300.gpu_count, gb300.gpu_memory_gb) == ("GB300 288GB", Decimal(4), Decimal(288))
    assert gb300.instance_type == "BM.GPU.GB300.4"  # the bare shape
    assert gb300.attributes["shape_suffix"] == "NVL72"
    assert gb300.price_per_hour == Decimal(72)  # 18 per GPU-hour x 4
    gb200 = offers["BM.GPU.GB200.4 (NVL72):on_demand"]
    assert (gb200.gpu_name, gb200.instance_type, gb200.attributes["shape_suffix"]) == (
        "GB200 186GB",
        "BM.GPU.GB200.4",
        "NVL72",
    )
    assert "shape_suffix" not in offers["BM.GPU.H100.8:on_demand"].attributes


def test_split_shape() -> None:
    assert split_shape("BM.GPU.GB200.4 (NVL72)") == ("BM.GPU.GB200.4", "NVL72")
    assert split_shape("BM.GPU.GB300.4(NVL72)") == ("BM.GPU.GB300.4", "NVL72")
    assert split_shape("BM.GPU.H100.8") == ("BM.GPU.H100.8", None)
    assert split_shape("BM.Standard.E4.128") == ("BM.Standard.E4.128", None)


def test_real_cpu_shapes_are_skipped_cleanly() -> None:
    """The real estimator excerpt: CPU shapes only, `gpuQty: null`, a disk part with `qty: 81.6`."""
    shapes = real_payload(REAL_CPU_SHAPES)
    assert {s["name"] for s in shapes["items"]} == {"BM.DenseIO.E5.128", "BM.Standard.E4.128"}
    alone = parse(shapes, {"items": []})
    assert alone.offers == [] and alone.skipped == []  # skipped silently, never a crash or a reason
    # next to GPU shapes (the bundled sample's), the real CPU shapes change nothing
    raw = json.loads(bundled_cassette("oci").read_text())
    sample_shapes = raw["interactions"][SHAPES]["response"]["json"]
    sample_products = raw["interactions"][PRODUCTS]["response"]["json"]
    mixed = parse({"items": shapes["items"] + sample_shapes["items"]}, sample_products)
    baseline = parse(sample_shapes, sample_products)
    assert [o.key for o in mixed.offers] == [o.key for o in baseline.offers]
    assert mixed.skipped == baseline.skipped
    assert not any(o.key.startswith(("BM.Standard", "BM.DenseIO")) for o in mixed.offers)
    assert resolve_all(mixed, "oci") == resolve_all(baseline, "oci")


def test_gpu_model_from_shape_name() -> None:
    assert gpu_model("BM.GPU.H100.8") == ("H100 SXM 80GB", Decimal(80))
    assert gpu_model("BM.GPU.GB200.4 (NVL72)") == ("GB200 186GB", Decimal(186))
    assert gpu_model("BM.GPU.GB300.4 (NVL72)") == ("GB300 288GB", Decimal(288))
    assert gpu_model("BM.GPU4.8") == ("A100 SXM 40GB", Decimal(40))
    assert gpu_model("VM.GPU3.2") == ("V100 SXM2 16GB", Decimal(16))
    assert gpu_model("BM.GPU.X9.4") == ("X9", None)  # unknown token passed on for the catalog to report


def test_price_in_first_usd_pay_as_you_go_entry() -> None:
    shapes = {
        "items": [{"name": "VM.GPU.A10.2", "gpuQty": 2, "products": [{"partNumber": "P1", "qty": 2, "type": "ocpu"}]}]
    }
    products = {
        "items": [
            {
                "partNumber": "P1",
                "currencyCodeLocalizations": [
                    {"currencyCode": "EUR", "prices": [{"model": "PAY_AS_YOU_GO", "value": 1.8}]},
                    {
                        "currencyCode": "USD",
                        "prices": [
                            {"model": "MONTHLY_COMMIT", "value": 1.5},
                            {"model": "PAY_AS_YOU_GO", "value": "2.0"},
                        ],
                    },
                ],
            }
        ]
    }
    result = parse(shapes, products)
    assert [(o.key, o.price_per_hour) for o in result.offers] == [("VM.GPU.A10.2:on_demand", Decimal(4))]


def test_truncated_json_raises() -> None:
    assert_replay_raises(Oci, answer(200, text='{"items": [{"name": "BM.GPU', at=SHAPES), "invalid JSON")


def test_missing_items_raises() -> None:
    assert_replay_raises(Oci, json_without(PRODUCTS, "items"), "'items' missing")


def test_missing_shape_products_raises() -> None:
    assert_replay_drops(Oci, json_without(SHAPES, "items", 2, "products"), "'products' missing")


def test_bad_quantity_raises() -> None:
    assert_replay_drops(Oci, json_with(SHAPES, "items", 2, "gpuQty", value={"value": 8}), "expected a number")


def test_repeated_500_raises() -> None:
    assert_replay_raises(Oci, answer(500, text="oops", at=SHAPES), "gave up after 4 attempts: HTTP 500")
