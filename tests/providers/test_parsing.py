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
