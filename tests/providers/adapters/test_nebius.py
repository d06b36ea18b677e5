"""Nebius's price-page sheet (providers/sheets/nebius.toml): per-GPU-hour rates from nebius.com/prices."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.nebius import NebiusRates
from providers.contract import Pricing, ScrapeResult
from providers.registry import get_provider
from tests.factories.cassettes import assert_integrity, replay_fixture
from tests.factories.price_pages import assert_price_page

# The page's table (read 2026-08-18): instance type → (card, on-demand $/GPU-hour, preemptible $/GPU-hour)
EXPECTED = {
    "hgx-h100": ("H100-SXM-80GB", "3.85", "2.15"),
    "hgx-h200": ("H200-SXM-141GB", "4.50", "2.45"),
    "hgx-b200": ("B200-SXM-180GB", "7.15", "3.95"),
    "hgx-b300": ("B300-SXM-288GB", "7.85", "4.30"),
    "rtx-pro-6000": ("RTXPRO6000-96GB", "1.80", "0.95"),
}

result = replay_fixture(NebiusRates)


def test_registered_as_a_dated_price_page(result: ScrapeResult) -> None:
    assert get_provider("nebius") is NebiusRates
    assert_price_page(NebiusRates, result, url="https://nebius.com/prices", as_of="2026-08-18")


def test_cards_resolve(result: ScrapeResult) -> None:
    resolved = assert_integrity(result, expected_gpus={card for card, _, _ in EXPECTED.values()}, min_offers=10)
    assert len(resolved) == len(result.offers) == 2 * len(EXPECTED)  # nothing set aside as unknown


def test_prices_as_quoted_per_gpu_hour(result: ScrapeResult) -> None:
    on_demand = {
        o.instance_type: (o.gpu_name, o.price_per_gpu_hour) for o in result.offers if o.pricing is Pricing.on_demand
    }
    spot = {o.instance_type: (o.gpu_name, o.price_per_gpu_hour) for o in result.offers if o.pricing is Pricing.spot}
    assert on_demand == {k: (card, Decimal(od)) for k, (card, od, _) in EXPECTED.items()}
    assert spot == {k: (card, Decimal(pe)) for k, (card, _, pe) in EXPECTED.items()}
    assert all(o.gpu_count == 1 and o.price_per_hour == o.price_per_gpu_hour for o in result.offers)
    assert all(o.reserved_term is None and o.currency == "USD" for o in result.offers)


def test_preemptible_is_cheaper_than_on_demand_for_every_machine(result: ScrapeResult) -> None:
    by_machine: dict[str, dict[Pricing, Decimal]] = {}
    for o in result.offers:
        assert o.instance_type is not None
        by_machine.setdefault(o.instance_type, {})[o.pricing] = o.price_per_hour
    assert set(by_machine) == set(EXPECTED)
    assert all(p[Pricing.spot] < p[Pricing.on_demand] for p in by_machine.values())


def test_offers_say_where_the_figures_come_from(result: ScrapeResult) -> None:
    for o in result.offers:
        assert o.attributes["source"].startswith("https://nebius.com/prices")
        assert "per GPU-hour" in o.attributes["note"]
