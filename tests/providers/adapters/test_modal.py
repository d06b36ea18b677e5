"""Modal's price-page sheet (providers/sheets/modal.toml): per-second GPU prices turned into $/GPU-hour."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.modal import ModalRates
from providers.contract import Pricing
from tests.factories.cassettes import assert_integrity, replay_fixture
from tests.factories.price_pages import assert_price_page

# modal.com/pricing: raw name → $ per GPU-second
PER_SECOND = {
    "T4-16GB": "0.000164",
    "L4-24GB": "0.000222",
    "A10-24GB": "0.000306",
    "L40S-48GB": "0.000542",
    "A100 40GB": "0.000583",
    "A100 80GB": "0.000694",
    "RTXPRO6000-96GB": "0.000842",
    "H100 80GB": "0.001097",
    "H200 141GB": "0.001261",
    "B200-SXM-180GB": "0.001736",
}

result = replay_fixture(ModalRates)


def test_labelled_as_a_dated_price_page(result):
    assert ModalRates.name == "modal"
    assert_price_page(ModalRates, result, url="https://modal.com/pricing", as_of="2026-05-25")


def test_cards_resolve(result):
    assert_integrity(
        result,
        expected_gpus={"T4-16GB", "L4-24GB", "A10-24GB", "L40S-48GB", "RTXPRO6000-96GB", "B200-SXM-180GB"},
        allowed_unknown={"A100 40GB", "A100 80GB", "H100 80GB", "H200 141GB"},  # form factor unstated
    )


def test_per_second_prices_become_hourly(result):
    hourly = {o.gpu_name: o.price_per_gpu_hour for o in result.offers}
    assert hourly == {gpu: Decimal(s) * 3600 for gpu, s in PER_SECOND.items()}
    assert hourly["H100 80GB"] == Decimal("3.9492")  # the page's own $/hr figure for an H100
    assert all(o.gpu_count == 1 and o.pricing is Pricing.on_demand for o in result.offers)
