"""Value parsing shared by the provider adapters."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from providers.parsing import memory_in_name


@pytest.mark.parametrize(
    ("raw", "memory"),
    [
        ("H100_SXM5_80GB", Decimal(80)),  # FluidStack
        ("Tesla_V100_PCIE_16GB", Decimal(16)),
        ("A30_24GB", Decimal(24)),
        ("Quadro_RTX_4000_8GB", Decimal(8)),  # the model number is not a size
        ("H100-80G-PCIe", Decimal(80)),  # Hyperstack
        ("A100-80G-PCIe-NVLink", Decimal(80)),
        ("H200-141G-SXM5", Decimal(141)),
        ("NVIDIA GeForce RTX 4090 PCIe 24GB", Decimal(24)),  # TensorDock
        ("geforcertx4090-pcie-24gb", Decimal(24)),
        ("H100_80GB", Decimal(80)),  # Prime Intellect
        ("RTX 4090 24 GB", Decimal(24)),
        ("T4", None),
        ("80GB", None),  # a lone size names no card
        ("RTX-A6000", None),
        ("L40", None),
    ],
)
def test_memory_in_name(raw, memory):
    assert memory_in_name(raw) == memory


@pytest.mark.parametrize("raw", ["NaN", "nan", "sNaN", "Infinity", "-inf", float("nan"), float("inf")])
def test_to_decimal_refuses_non_finite_numbers(raw):
    # A NaN used to come through and crash the adapter with InvalidOperation at its `price <= 0` check.
    from providers.contract import ProviderError
    from providers.parsing import to_decimal

    with pytest.raises(ProviderError, match="not a finite number"):
        to_decimal(raw, "data[0].price")


@pytest.mark.parametrize("raw", ["1e400", 1.5e300, "-1e30"])
def test_to_decimal_refuses_magnitudes_no_field_has(raw):
    # `gigabytes`/`tidy_decimal` quantize such a value and raised InvalidOperation out of the parser.
    from providers.contract import ProviderError
    from providers.parsing import to_decimal

    with pytest.raises(ProviderError, match="out of range"):
        to_decimal(raw, "nodes[0].ram_gb")


def test_huge_ram_is_a_provider_error_not_invalid_operation():
    from providers.adapters.lium import Lium
    from tests.factories.cassettes import assert_replay_drops, json_with

    # A ProviderError for that node (dropped with its reason), never an InvalidOperation crash.
    assert_replay_drops(Lium, json_with(0, "nodes", 0, "ram_gb", value="1e400"), "out of range")


# --- money strings: one reader for every adapter --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "amount", "currency"),
    [
        ("€0.85", "0.85", "EUR"),
        ("1,50 €", "1.50", "EUR"),  # a decimal comma (was read as 1 EUR)
        ("CA$1.50", "1.50", "CAD"),  # a prefixed dollar names its own currency (was USD)
        ("A$ 2", "2", "AUD"),
        ("HK$3.10", "3.10", "HKD"),
        ("US$ 1.5 USD", "1.5", "USD"),
        ("1.234,56 EUR", "1234.56", "EUR"),
        ("1,234.56 usd", "1234.56", "USD"),
        ("12 000 JPY", "12000", "JPY"),
        ("0,385", "0.385", None),
        ("2.5/hr", "2.5", None),
        ("£ 1.20 per hour", "1.20", "GBP"),
        (1.5, "1.5", None),
        (Decimal("2.25"), "2.25", None),
    ],
)
def test_parse_money_reads_symbols_codes_and_separators(text, amount, currency):
    from providers.parsing import parse_money

    assert parse_money(text, "price") == (Decimal(amount), currency)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("$0.85", "'$' is ambiguous"),  # a bare $ is USD, CAD, AUD, ...: only an adapter that documents it
        ("¥100", "'¥' is ambiguous"),
        ("0.85 XYZ", "'XYZ' is unknown"),
        ("$0.85 EUR", "'$' is ambiguous"),
        ("CA$1 USD", "names two currencies"),
        ("1,500", "thousands or a decimal comma"),
        ("１.５", "unreadable"),  # fullwidth digits
        ("١٫٥", "unreadable"),  # Arabic-Indic digits
        ("-1.5", "'-' is unknown"),
        ("1.234.56", "unreadable"),
        ("1.5 2.5", "unreadable"),
        ("NaN", "unreadable"),
        ("", "unreadable"),
        (True, "expected a price"),
        (None, "expected a price"),
    ],
)
def test_parse_money_refuses_the_ambiguous(text, why):
    from providers.contract import ProviderError
    from providers.parsing import parse_money

    with pytest.raises(ProviderError, match=re.escape(why)):
        parse_money(text, "price")


def test_a_documented_bare_dollar_is_that_currency():
    from providers.parsing import parse_money

    assert parse_money("$0.85", "price", dollar="USD") == (Decimal("0.85"), "USD")
    assert parse_money("CA$0.85", "price", dollar="USD") == (Decimal("0.85"), "CAD")


@pytest.mark.parametrize(
    ("price", "amount", "currency"),
    [("CA$1.50", "1.50", "CAD"), ("A$2.10", "2.10", "AUD"), ("HK$3.10", "3.10", "HKD"), ("1,50 €", "1.50", "EUR")],
)
def test_seeweb_string_prices_keep_their_own_currency(price, amount, currency):
    from providers.adapters.seeweb import parse

    plan = {
        "name": "p",
        "gpu": "1 GPU",
        "gpu_label": "L4 24GB",
        "hourly_price": price,
        "available_regions": [{"location": "it-fr2"}],
    }
    (offer,) = parse({"plans": [plan]}).offers
    assert (offer.price_per_hour, offer.currency) == (Decimal(amount), currency)  # before: USD, or 1 EUR
