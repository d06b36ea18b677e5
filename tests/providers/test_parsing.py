"""Value parsing shared by the provider adapters."""

from __future__ import annotations

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
    from tests.factories.cassettes import assert_replay_raises, json_with

    assert_replay_raises(Lium, json_with(0, "nodes", 0, "ram_gb", value="1e400"), "out of range")
