"""Replicate's price-page sheet (providers/sheets/replicate.toml): per-second instance prices."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.replicate import ReplicateRates
from providers.contract import Pricing
from tests.factories.cassettes import assert_integrity, replay_fixture
from tests.factories.price_pages import assert_price_page

# replicate.com/pricing: sku → (GPUs, $ per instance-second, the $/hr the page prints beside it)
PAGE = {
    "gpu-t4": (1, "0.000225", "0.81"),
    "gpu-a40-small": (1, "0.000575", "2.07"),
    "gpu-a40-large": (1, "0.000725", "2.61"),
    "gpu-a40-large-8x": (8, "0.005800", "20.88"),
    "gpu-l40s": (1, "0.000975", "3.51"),
    "gpu-8x-l40s": (8, "0.007800", "28.08"),
    "gpu-a100-large": (1, "0.001400", "5.04"),
    "gpu-a100-large-8x": (8, "0.011200", "40.32"),
    "gpu-h100": (1, "0.001525", "5.49"),
    "gpu-h100-8x": (8, "0.012200", "43.92"),
}

result = replay_fixture(ReplicateRates)


def test_labelled_as_a_dated_price_page(result):
    assert ReplicateRates.name == "replicate"
    assert_price_page(ReplicateRates, result, url="https://replicate.com/pricing", as_of="2026-12-01")


def test_cards_resolve(result):
    assert_integrity(
        result,
        expected_gpus={"T4-16GB", "A40-48GB", "L40S-48GB"},
        allowed_unknown={"A100 80GB", "H100 80GB"},  # form factor unstated: ingest assumes the slowest
        min_offers=18,
    )


def test_per_second_instance_prices_match_the_hourly_figures(result):
    offers = {o.instance_type: o for o in result.offers}
    assert len(offers) == len(result.offers) == 18  # every sku once, the two A40 1x instances apart
    for sku, (gpus, per_second, hourly) in PAGE.items():
        offer = offers[sku]
        assert offer.gpu_count == gpus and offer.price_per_hour == Decimal(per_second) * 3600
        assert offer.price_per_hour == Decimal(hourly)
    assert all(o.pricing is Pricing.on_demand for o in result.offers)
