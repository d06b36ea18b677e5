"""Static rate sheets: the seed's reference medians and packet.ai's published rates."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.packetai import PacketAiRates
from providers.adapters.reference import ReferenceRates
from providers.contract import ProviderError
from providers.sheet import parse_sheet
from tests.factories.cassettes import assert_integrity, replay

SEED_RATES = {  # seed 000, "Price per GPU-hour"
    "RTX4090-24GB": "0.44",
    "RTX6000ADA-48GB": "0.79",
    "L40S-48GB": "1.19",
    "A100-SXM-40GB": "1.19",
    "A100-SXM-80GB": "1.59",
    "H100-SXM-80GB": "2.69",
    "H200-SXM-141GB": "3.39",
}


def test_reference_sheet_is_the_seed_table():
    result = replay(ReferenceRates)
    resolved = assert_integrity(result, expected_gpus=set(SEED_RATES))
    prices = {resolved[o.key]: o.price_per_gpu_hour for o in result.offers}
    assert prices == {k: Decimal(v) for k, v in SEED_RATES.items()}
    assert all(o.attributes["reference"] is True and "seeds/000" in o.attributes["source"] for o in result.offers)


def test_packetai_sheet():
    result = replay(PacketAiRates)
    resolved = assert_integrity(result, expected_gpus={"A100-SXM-80GB", "L40S-48GB", "RTX4090-24GB", "B200-SXM-180GB"})
    prices = {resolved[o.key]: o.price_per_hour for o in result.offers}
    assert prices["A100-SXM-80GB"] == Decimal("1.43") and prices["B200-SXM-180GB"] == Decimal("3.75")
    assert ReferenceRates.describe()["reference"] is True and PacketAiRates.describe()["as_of"] == "2026-08-06"


def test_malformed_sheet_row_is_a_provider_error():
    with pytest.raises(ProviderError, match="row 0"):
        parse_sheet({"rates": [{"gpu": "H100-SXM-80GB", "price_per_gpu_hour": "two dollars"}]})
