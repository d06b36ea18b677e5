"""CoreWeave's price-page sheet (providers/sheets/coreweave.toml): instance prices from coreweave.com/pricing."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.coreweave import CoreWeaveRates
from providers.contract import Pricing
from tests.factories.cassettes import assert_integrity, replay_fixture
from tests.factories.price_pages import assert_price_page

# The page's table (2026-09-20): instance type → (GPUs, on-demand $/instance-hour, spot or None)
EXPECTED = {
    "hgx-h100": (8, "49.24", "19.71"),
    "hgx-h200": (8, "50.44", "20.93"),
    "hgx-b200": (8, "68.80", "34.11"),
    "gb200-nvl72": (4, "42.00", None),
    "a100": (8, "21.60", "9.65"),
    "l40s": (8, "18.00", None),
    "l40": (8, "10.00", None),
    "rtx-pro-6000": (8, "20.00", None),
    "gh200": (1, "6.50", None),
}

result = replay_fixture(CoreWeaveRates)


def test_labelled_as_a_dated_price_page(result):
    assert CoreWeaveRates.name == "coreweave"
    assert_price_page(CoreWeaveRates, result, url="https://www.coreweave.com/pricing", as_of="2026-09-20")


def test_cards_resolve(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"H100-SXM-80GB", "H200-SXM-141GB", "B200-SXM-180GB", "GB200-186GB", "L40S-48GB"}
        | {"L40-48GB", "RTXPRO6000-96GB", "GH200-96GB"},
    )
    # The page names no A100 form factor: ingest's rule assumes the slowest variant (and records it).
    assert {resolved[o.key] for o in result.offers if o.gpu_name == "A100 80GB"} == {"A100-PCIE-80GB"}


def test_instance_prices_and_counts_as_quoted(result):
    on_demand = {
        o.instance_type: (int(o.gpu_count), o.price_per_hour) for o in result.offers if o.pricing is Pricing.on_demand
    }
    spot = {o.instance_type: o.price_per_hour for o in result.offers if o.pricing is Pricing.spot}
    assert on_demand == {k: (n, Decimal(od)) for k, (n, od, _) in EXPECTED.items()}
    assert spot == {k: Decimal(s) for k, (_, _, s) in EXPECTED.items() if s}
    h100 = next(o for o in result.offers if o.instance_type == "hgx-h100" and o.pricing is Pricing.on_demand)
    assert h100.price_per_gpu_hour == Decimal("6.155")  # $49.24 for 8 GPUs
    assert all(o.region == "na" and o.reserved_term is None for o in result.offers)
