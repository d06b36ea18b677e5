"""Paperspace's price-page sheet (providers/sheets/paperspace.toml), including its 3-year commitment rate."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.paperspace import PaperspaceRates
from providers.contract import Pricing
from tests.factories.cassettes import assert_integrity, replay_fixture
from tests.factories.price_pages import assert_price_page

ON_DEMAND = {
    "H100 80GB": "3.09",
    "A100 80GB": "1.15",
    "RTXA6000-48GB": "1.89",
    "RTXA5000-24GB": "1.38",
    "RTXA4000-16GB": "0.76",
}

result = replay_fixture(PaperspaceRates)


def test_labelled_as_a_dated_price_page(result):
    assert PaperspaceRates.name == "paperspace"
    assert_price_page(PaperspaceRates, result, url="https://www.paperspace.com/pricing", as_of="2026-09-20")


def test_cards_resolve(result):
    assert_integrity(
        result,
        expected_gpus={"H100-SXM-80GB", "RTXA6000-48GB", "RTXA5000-24GB", "RTXA4000-16GB"},
        allowed_unknown={"H100 80GB", "A100 80GB"},  # form factor unstated: ingest assumes the slowest
    )


def test_on_demand_prices(result):
    on_demand = {o.gpu_name: o.price_per_gpu_hour for o in result.offers if o.pricing is Pricing.on_demand}
    assert on_demand == {gpu: Decimal(p) for gpu, p in ON_DEMAND.items()}


def test_commitment_is_a_reserved_rate_with_its_term(result):
    (reserved,) = [o for o in result.offers if o.pricing is Pricing.reserved]
    assert reserved.gpu_name == "H100-SXM-80GB" and reserved.reserved_term == "3y"
    assert reserved.price_per_gpu_hour == Decimal("2.24")
    assert reserved.key.endswith(":3y")  # apart from any on-demand rate of the same card
