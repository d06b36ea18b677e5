"""Crusoe's static rate sheet (providers/sheets/crusoe.toml)."""

from __future__ import annotations

import inspect
from decimal import Decimal

from providers.adapters.crusoe import CrusoeRates
from providers.contract import Pricing, ProviderKind
from providers.sheet import load_sheet
from tests.factories.cassettes import assert_integrity, replay_fixture

# The Crusoe table (gpuhunt 35841515): canonical id → (on-demand, spot or None) $/GPU-hour
EXPECTED = {
    "A100-PCIE-40GB": ("1.45", "1.00"),
    "A100-PCIE-80GB": ("1.65", "1.20"),
    "A100-SXM-80GB": ("1.95", "1.30"),
    "H100-SXM-80GB": ("3.90", "1.60"),
    "H200-SXM-141GB": ("4.29", None),
    "B200-SXM-180GB": ("7.25", None),
    "L40S-48GB": ("1.00", "0.50"),
    "A40-48GB": ("0.90", "0.40"),
    "MI300X-192GB": ("3.45", "0.95"),
}


result = replay_fixture(CrusoeRates)  # replayed against an empty cassette: a sheet makes no request


def test_registered_as_static_sheet():
    assert CrusoeRates.name == "crusoe" and not inspect.isabstract(CrusoeRates)  # discoverable
    assert CrusoeRates.kind is ProviderKind.static_sheet
    assert CrusoeRates.credentials == ()
    described = CrusoeRates.describe()
    assert described["reference"] is True
    assert described["as_of"] == "2026-08-19"
    assert "gpuhunt" in str(described["source"])


def test_sheet_parses_and_ids_resolve(result):
    resolved = assert_integrity(result, expected_gpus=set(EXPECTED))
    for offer in result.offers:
        assert resolved[offer.key] == offer.gpu_name  # gpu fields are canonical ids
    assert len(result.offers) == 16
    sheet = load_sheet("crusoe")
    assert sheet["url"] == "https://crusoe.ai/cloud/pricing"


def test_prices_match_reference(result):
    on_demand = {o.gpu_name: o.price_per_gpu_hour for o in result.offers if o.pricing is Pricing.on_demand}
    spot = {o.gpu_name: o.price_per_gpu_hour for o in result.offers if o.pricing is Pricing.spot}
    assert on_demand == {gpu: Decimal(od) for gpu, (od, _) in EXPECTED.items()}
    assert spot == {gpu: Decimal(s) for gpu, (_, s) in EXPECTED.items() if s is not None}
    assert "H200-SXM-141GB" not in spot and "B200-SXM-180GB" not in spot


def test_offers_are_labelled_reference(result):
    for offer in result.offers:
        assert offer.gpu_count == 1
        assert offer.attributes["reference"] is True
        assert offer.attributes["as_of"] == "2026-08-19"
        assert offer.region == ""
    b200 = next(o for o in result.offers if o.gpu_name == "B200-SXM-180GB")
    assert "estimated" in b200.attributes["note"]
