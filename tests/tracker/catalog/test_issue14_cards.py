"""Cards added for issue #14 (names the new adapters' cassettes carried that the catalog lacked): V100S,
A800, RTX 3060, RTX 4070 Ti SUPER, and the CUDO conventions that make its memory-less names resolve."""

from __future__ import annotations

import pytest

from providers.adapters.cudo import Cudo
from providers.adapters.ovhcloud import OvhCloud
from providers.adapters.salad import Salad
from providers.adapters.spheron import Spheron
from providers.contract import Provider
from tests.factories.cassettes import replay, resolve_all
from tracker.catalog.gpus import AmbiguousGpuName, UnknownGpuName, get_catalog

CATALOG = get_catalog()

# id -> (family, memory GB, form factor, architecture, interconnect, has FP8)
NEW_CARDS: dict[str, tuple[str, float, str, str, str, bool]] = {
    "V100S-32GB": ("V100S", 32, "PCIe", "volta", "pcie", False),
    "A800-PCIE-40GB": ("A800", 40, "PCIe", "ampere", "pcie", False),
    "A800-PCIE-80GB": ("A800", 80, "PCIe", "ampere", "pcie", False),
    "A800-SXM-80GB": ("A800", 80, "SXM", "ampere", "nvlink", False),
    "RTX3060-8GB": ("RTX3060", 8, "consumer", "ampere", "pcie", False),
    "RTX3060-12GB": ("RTX3060", 12, "consumer", "ampere", "pcie", False),
    "RTX4070TISUPER-16GB": ("RTX4070TISUPER", 16, "consumer", "ada", "pcie", True),
}


@pytest.mark.parametrize("gpu_id", NEW_CARDS)
def test_new_card_specs(gpu_id: str) -> None:
    family, memory, form_factor, architecture, interconnect, has_fp8 = NEW_CARDS[gpu_id]
    spec = CATALOG.get(gpu_id)
    assert (spec.family, spec.memory_gb, spec.form_factor, spec.architecture, spec.interconnect) == (
        family,
        memory,
        form_factor,
        architecture,
        interconnect,
    )
    assert spec.vendor == "nvidia"
    assert spec.bandwidth_tbs > 0 and spec.bf16_tflops > 0 and spec.tdp_w and spec.tdp_w > 0
    assert (spec.fp8_tflops is not None) == has_fp8
    if spec.fp8_tflops is not None:
        assert spec.fp8_tflops == pytest.approx(2 * spec.bf16_tflops)
    assert 5 < spec.bf16_tflops / spec.bandwidth_tbs < 600  # a unit slip is 1000x off
    assert spec.notes and ("[V]" in spec.notes or "[R]" in spec.notes)


def test_spec_relations() -> None:
    get = CATALOG.get
    # The V100S is a faster-memory, slightly faster-clocked V100 PCIe 32GB at the same 250 W
    assert get("V100S-32GB").bandwidth_tbs > get("V100-PCIE-32GB").bandwidth_tbs
    assert get("V100S-32GB").bf16_tflops > get("V100-PCIE-32GB").bf16_tflops
    assert get("V100S-32GB").tdp_w == get("V100-PCIE-32GB").tdp_w == 250
    # The A800 is the A100 with less NVLink: same compute, memory and bandwidth per variant
    for a800, a100 in (
        ("A800-PCIE-40GB", "A100-PCIE-40GB"),
        ("A800-PCIE-80GB", "A100-PCIE-80GB"),
        ("A800-SXM-80GB", "A100-SXM-80GB"),
    ):
        assert (get(a800).bf16_tflops, get(a800).bandwidth_tbs, get(a800).memory_gb) == (
            get(a100).bf16_tflops,
            get(a100).bandwidth_tbs,
            get(a100).memory_gb,
        )
    # Both RTX 3060s are one GA106: same compute, the 8 GB card on a narrower bus
    assert get("RTX3060-8GB").bf16_tflops == get("RTX3060-12GB").bf16_tflops
    assert get("RTX3060-8GB").bandwidth_tbs < get("RTX3060-12GB").bandwidth_tbs
    assert get("RTX3060-12GB").bf16_tflops < get("RTX3060TI-8GB").bf16_tflops
    # The 4070 Ti SUPER sits between the 4070 Ti and the 4080
    assert get("RTX4070TI-12GB").bf16_tflops < get("RTX4070TISUPER-16GB").bf16_tflops < get("RTX4080-16GB").bf16_tflops


@pytest.mark.parametrize(
    ("raw", "memory_gb", "provider", "expected"),
    [
        # OVHcloud gpu.model + memory, and the device name
        ("V100S", 32, "ovhcloud", "V100S-32GB"),
        ("V100S 32GB", None, None, "V100S-32GB"),
        ("Tesla V100S-PCIE-32GB", None, None, "V100S-32GB"),
        # A800: CUDO's memory-less name by its convention; elsewhere the memory picks
        ("A800 PCIe", None, "cudo", "A800-PCIE-80GB"),
        ("A800 PCIE", 80, "vastai", "A800-PCIE-80GB"),
        ("A800 PCIe", 40, None, "A800-PCIE-40GB"),
        ("NVIDIA A800-SXM4-80GB", None, None, "A800-SXM-80GB"),
        ("A800 80GB PCIe", None, None, "A800-PCIE-80GB"),
        # RTX 3060: Salad's "<model> (<vram> GB)", TensorDock's slug, the device name with memory
        ("RTX 3060 (12 GB)", 12, "salad", "RTX3060-12GB"),
        ("geforcertx3060-pcie-12gb", None, "tensordock", "RTX3060-12GB"),
        ("NVIDIA GeForce RTX 3060", 12, "runpod", "RTX3060-12GB"),
        ("RTX 3060", 8, None, "RTX3060-8GB"),
        # RTX 4070 Ti SUPER, not the 4070 Ti
        ("RTX 4070 Ti Super (16 GB)", 16, "salad", "RTX4070TISUPER-16GB"),
        ("NVIDIA GeForce RTX 4070 Ti SUPER", None, "runpod", "RTX4070TISUPER-16GB"),
        ("RTX 4070 Ti", None, None, "RTX4070TI-12GB"),
    ],
)
def test_new_names_resolve(raw: str, memory_gb: float | None, provider: str | None, expected: str) -> None:
    assert CATALOG.normalize(raw, memory_gb, provider=provider).id == expected


@pytest.mark.parametrize(
    ("raw", "provider", "candidates"),
    [
        # No memory: 8 or 12 GB; 40 or 80 GB. The CUDO convention applies to CUDO only.
        ("RTX 3060", None, {"RTX3060-8GB", "RTX3060-12GB"}),
        ("A800 PCIe", None, {"A800-PCIE-40GB", "A800-PCIE-80GB"}),
        # CUDO's V100 names neither memory nor form factor: no convention guesses it
        ("V100", "cudo", {"V100-PCIE-16GB", "V100-SXM-16GB", "V100-PCIE-32GB", "V100-SXM-32GB"}),
        # With the 16 GB SkyPilot's CUDO table gives, only the form factor is open (ingest: slowest variant)
        ("V100 16GB", "cudo", {"V100-PCIE-16GB", "V100-SXM-16GB"}),
    ],
)
def test_open_names_stay_ambiguous(raw: str, provider: str | None, candidates: set[str]) -> None:
    with pytest.raises(AmbiguousGpuName) as info:
        CATALOG.normalize(raw, provider=provider)
    assert set(info.value.candidates) == candidates


def test_bare_v100_elsewhere_is_still_open_on_memory() -> None:
    # Outside CUDO a bare "V100" could be any of four cards; the V100S is not one of them
    with pytest.raises(AmbiguousGpuName) as info:
        CATALOG.normalize("V100")
    assert "V100S-32GB" not in info.value.candidates
    assert len(info.value.candidates) == 4


def test_an_80gb_h100_nvl_is_no_card() -> None:
    """The H100 NVL is 94 GB (catalogued as H100-NVL-94GB). Spheron's "H100_NVL" rows say 80 GB on an 8-GPU
    "…-NVLink" machine: an NVLink-connected 80 GB H100, which could be SXM or bridged PCIe. Neither the NVL
    card nor a guessed form factor: it stays unknown."""
    assert CATALOG.normalize("H100 NVL", 94).id == "H100-NVL-94GB"
    with pytest.raises(UnknownGpuName, match="no H100 card matches NVL"):
        CATALOG.normalize("H100 NVL 80GB", 80, provider="spheron")


# --- the adapters' cassettes, resolved exactly as ingest resolves them ---------------------------


def _resolved(provider: type[Provider]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    result = replay(provider)
    resolved, unknown = resolve_all(result, provider.name)
    names = {o.key: o.gpu_name for o in result.offers}
    return resolved, unknown, names


def test_ovhcloud_v100s_offers_resolve() -> None:
    resolved, unknown, names = _resolved(OvhCloud)
    assert not any("V100S" in raw for raw in unknown)
    v100s = [k for k, raw in names.items() if raw.startswith("V100S")]
    assert v100s and all(resolved.get(k) == "V100S-32GB" for k in v100s if k in resolved)
    assert any(resolved.get(k) == "V100S-32GB" for k in v100s)


def test_cudo_a800_offers_resolve_and_the_bare_v100_stays_unknown() -> None:
    resolved, unknown, _ = _resolved(Cudo)
    assert set(unknown) == {"V100"}
    assert resolved["us-carlsbad-1:intel-ice-lake-a800-pci:1"] == "A800-PCIE-80GB"
    assert "us-newyork-1:intel-broadwell-v100:1" not in resolved


def test_salad_rtx3060_offers_resolve() -> None:
    resolved, unknown, names = _resolved(Salad)
    assert unknown == {}
    ids = {resolved[k] for k, raw in names.items() if raw.startswith("RTX 3060 (")}
    assert ids == {"RTX3060-12GB"}


def test_spheron_keeps_only_the_80gb_nvl_unknown() -> None:
    _, unknown, _ = _resolved(Spheron)
    assert set(unknown) == {"H100 NVL 80GB"}
