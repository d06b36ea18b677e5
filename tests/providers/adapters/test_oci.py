"""OCI Cost Estimator adapter against its bundled schema-faithful cassette (providers.md B.7)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from providers.adapters.oci import DERIVED, PRODUCTS_URL, SHAPES_URL, Oci, gpu_model, parse
from providers.contract import Pricing, ProviderKind, ScrapeResult
from providers.registry import get_provider
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

SHAPES, PRODUCTS = 0, 2  # interaction indexes (1 is the recorded 429 for products.json)


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
        },
        allowed_unknown={"P100 16GB"},
        min_offers=14,
    )
    assert resolved["BM.GPU4.8:on_demand"] == "A100-SXM-40GB"
    assert resolved["BM.GPU.A100-v2.8:on_demand"] == "A100-SXM-80GB"
    assert len(result.offers) == 14


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
    assert len(result.offers) == 14
    assert [str(r.url) for r in requests] == [SHAPES_URL, PRODUCTS_URL, PRODUCTS_URL]
    assert all("authorization" not in r.headers for r in requests)


def test_gpu_model_from_shape_name() -> None:
    assert gpu_model("BM.GPU.H100.8") == ("H100 SXM 80GB", Decimal(80))
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
    assert_replay_raises(Oci, json_without(SHAPES, "items", 2, "products"), "'products' missing")


def test_bad_quantity_raises() -> None:
    assert_replay_raises(Oci, json_with(SHAPES, "items", 2, "gpuQty", value={"value": 8}), "expected a number")


def test_repeated_500_raises() -> None:
    assert_replay_raises(Oci, answer(500, text="oops", at=SHAPES), "gave up after 4 attempts: HTTP 500")
