"""The GPU catalog (tracker/catalog/gpus.toml) and name normalisation (tracker/gpus.py)."""

from __future__ import annotations

import contextlib
import tomllib
from importlib import resources
from typing import Any

import pytest

from tracker.catalog.gpus import (
    FORM_FACTORS,
    INTERCONNECTS,
    VENDORS,
    AmbiguousGpuName,
    GpuCatalog,
    GpuCatalogError,
    GpuNameError,
    GpuSpec,
    UnknownGpuName,
    get_catalog,
)

CATALOG = get_catalog()
DATA: dict[str, Any] = tomllib.loads((resources.files("tracker.catalog") / "gpus.toml").read_text())


def ids(specs: list[GpuSpec]) -> list[str]:
    return [s.id for s in specs]


# --- the cards -------------------------------------------------------------------------------------

# Every row of the vendors' spec tables, split per memory size and form factor.
SPEC_TABLE_CARDS = [
    "V100-SXM-16GB",
    "V100-SXM-32GB",
    "V100-PCIE-16GB",
    "V100-PCIE-32GB",
    "T4-16GB",
    "A10-24GB",
    "A10G-24GB",
    "L4-24GB",
    "L40-48GB",
    "L40S-48GB",
    "A40-48GB",
    "RTXA6000-48GB",
    "RTX6000ADA-48GB",
    "RTX3090-24GB",
    "RTX4090-24GB",
    "RTX5090-32GB",
    "A100-PCIE-40GB",
    "A100-SXM-40GB",
    "A100-PCIE-80GB",
    "A100-SXM-80GB",
    "H100-PCIE-80GB",
    "H100-SXM-80GB",
    "H100-NVL-94GB",
    "H200-SXM-141GB",
    "H200-NVL-141GB",
    "GH200-96GB",
    "GH200-144GB",
    "B200-SXM-180GB",
    "B300-SXM-288GB",
    "GB200-186GB",
    "GB300-288GB",
    "MI250X-128GB",
    "MI300X-192GB",
    "MI325X-256GB",
    "GAUDI2-96GB",
    "GAUDI3-128GB",
]


def test_catalog_has_every_spec_table_card_and_more() -> None:
    all_ids = ids(CATALOG.all())
    assert len(all_ids) >= 30
    assert len(all_ids) == len(set(all_ids))
    missing = [i for i in SPEC_TABLE_CARDS if i not in all_ids]
    assert not missing
    for extra in [
        "RTXPRO6000-96GB",
        "A30-24GB",
        "A16-16GB",
        "RTXA4000-16GB",
        "RTXA5000-24GB",
        "RTX3080-10GB",
        "RTX4080-16GB",
        "RTX5080-16GB",
        "RTX2000ADA-16GB",
        "RTX4000ADA-20GB",
        "MI355X-288GB",
        "H20-SXM-96GB",
        "L20-48GB",
    ]:
        assert extra in all_ids


@pytest.mark.parametrize("spec", CATALOG.all(), ids=lambda s: s.id)
def test_every_card_has_its_specs(spec: GpuSpec) -> None:
    assert spec.vendor in VENDORS
    assert spec.form_factor in FORM_FACTORS
    assert spec.interconnect in INTERCONNECTS
    assert spec.name and spec.architecture
    assert spec.memory_gb > 0 and spec.bandwidth_tbs > 0 and spec.bf16_tflops > 0
    assert spec.tdp_w is not None and spec.tdp_w > 0
    if spec.fp8_tflops is not None:
        assert spec.fp8_tflops >= spec.bf16_tflops  # FP8 is never slower than BF16
    assert spec.id.startswith(spec.family + "-") and spec.id.endswith(f"-{spec.memory_gb:g}GB")
    assert CATALOG.get(spec.id) is spec and CATALOG.family_of(spec.id) == spec.family
    # A GPU with no sensible bandwidth/TFLOPs ratio is a typo (e.g. TB/s entered as GB/s). The floor is
    # low because cards without tensor cores (K80, M60, P4) carry their 4-6 TF FP32 peak.
    assert 0.05 <= spec.bandwidth_tbs <= 10 and 2 <= spec.bf16_tflops <= 3000


def test_h100_variants_are_distinct_cards_in_one_family() -> None:
    sxm, pcie, nvl = (CATALOG.get(i) for i in ("H100-SXM-80GB", "H100-PCIE-80GB", "H100-NVL-94GB"))
    assert (sxm.bf16_tflops, pcie.bf16_tflops, nvl.bf16_tflops) == (989, 756, 835)
    assert (sxm.fp8_tflops, pcie.fp8_tflops) == (1979, 1513)
    assert (sxm.form_factor, pcie.form_factor, nvl.form_factor) == ("SXM", "PCIe", "NVL")
    assert (sxm.interconnect, pcie.interconnect, nvl.interconnect) == ("nvlink", "pcie", "nvlink")
    assert nvl.memory_gb == 94
    assert {sxm.family, pcie.family, nvl.family} == {"H100"}


def test_spec_table_facts_spot_checks() -> None:
    assert CATALOG.get("RTX4090-24GB").bf16_tflops == 165.2  # FP32 accumulate, not 330
    assert CATALOG.get("RTX3090-24GB").bf16_tflops == 71
    assert CATALOG.get("L40-48GB").bf16_tflops == 181.05  # half-rate vs L40S
    assert CATALOG.get("L40S-48GB").bf16_tflops == 362.05
    assert CATALOG.get("V100-SXM-16GB").bf16_tflops == 125  # FP16: no BF16 on Volta
    assert CATALOG.get("V100-SXM-16GB").fp8_tflops is None
    assert {s.bf16_tflops for s in CATALOG.resolve("A100")} == {312}
    assert CATALOG.get("A100-SXM-80GB").bandwidth_tbs == 2.039
    assert CATALOG.get("A100-PCIE-80GB").bandwidth_tbs == 1.935
    assert CATALOG.get("B200-SXM-180GB").memory_gb == 180
    assert CATALOG.get("MI300X-192GB").interconnect == "infinity-fabric"
    assert CATALOG.get("GAUDI3-128GB").bf16_tflops == 1677


def test_get_and_families() -> None:
    assert CATALOG.get("h100-sxm-80gb").id == "H100-SXM-80GB"
    with pytest.raises(KeyError):
        CATALOG.get("H100-SXM-94GB")
    families = CATALOG.families()
    assert len(families) == len(set(families))
    assert {"H100", "A100", "H200", "RTX4090", "L40S", "MI300X", "V100", "GH200"} <= set(families)
    assert CATALOG.all() == CATALOG.all() and CATALOG.all() is not CATALOG.all()
    assert ids(CATALOG.all()) == [g["id"] for g in DATA["gpu"]]  # stable, file order
    assert get_catalog() is CATALOG


# --- every name in the data resolves to its card --------------------------------------------------

CARD_ALIASES = [(alias, g["id"]) for g in DATA["gpu"] for alias in g.get("aliases", [])]
RAW_NAMES = [(p, raw, target) for p, names in DATA["raw_names"].items() for raw, target in names.items()]
CONVENTIONS = [(p, raw, target) for p, names in DATA["provider_conventions"].items() for raw, target in names.items()]
FAMILY_ALIASES = [(alias, family) for family, aliases in DATA["family_aliases"].items() for alias in aliases]


@pytest.mark.parametrize(("alias", "card"), CARD_ALIASES)
def test_card_alias_resolves(alias: str, card: str) -> None:
    assert CATALOG.normalize(alias).id == card
    assert ids(CATALOG.resolve(alias)) == [card]


@pytest.mark.parametrize(("provider", "raw", "card"), RAW_NAMES)
def test_raw_provider_name_resolves(provider: str, raw: str, card: str) -> None:
    spec = CATALOG.get(card)
    assert CATALOG.normalize(raw).id == card
    assert CATALOG.normalize(raw, provider=provider).id == card
    assert CATALOG.normalize(f"8x {raw}", memory_gb=spec.memory_gb).id == card


@pytest.mark.parametrize(("provider", "raw", "target"), CONVENTIONS)
def test_provider_convention_resolves_only_for_its_provider(provider: str, raw: str, target: Any) -> None:
    for card in [target] if isinstance(target, str) else target:
        spec = CATALOG.get(card)
        assert CATALOG.normalize(raw, memory_gb=spec.memory_gb, provider=provider).id == card
        # Elsewhere the bare name must not silently pick a *different* variant.
        with contextlib.suppress(GpuNameError):
            assert CATALOG.normalize(raw, memory_gb=spec.memory_gb).id == card


@pytest.mark.parametrize(("alias", "family"), FAMILY_ALIASES)
def test_family_alias_resolves_to_whole_family(alias: str, family: str) -> None:
    assert {s.family for s in CATALOG.resolve(alias)} == {family}
    assert ids(CATALOG.resolve(alias)) == ids(CATALOG.resolve(family))


# Pinned expectations, independent of the data file: a data edit that remaps one of these fails here.
@pytest.mark.parametrize(
    ("raw", "memory_gb", "provider", "expected"),
    [
        # RunPod ids and display names (§B.2)
        ("NVIDIA H100 80GB HBM3", 80, "runpod", "H100-SXM-80GB"),
        ("NVIDIA H100 PCIe", 80, "runpod", "H100-PCIE-80GB"),
        ("NVIDIA GeForce RTX 4090", 24, "runpod", "RTX4090-24GB"),
        ("AMD Instinct MI300X OAM", 192, "runpod", "MI300X-192GB"),
        ("H100 SXM", 80, "runpod", "H100-SXM-80GB"),
        ("A100 SXM", 80, "runpod", "A100-SXM-80GB"),
        ("A100 PCIe", 80, "runpod", "A100-PCIE-80GB"),
        ("NVIDIA H200", 141, "runpod", "H200-SXM-141GB"),
        ("NVIDIA RTX 6000 Ada Generation", None, "runpod", "RTX6000ADA-48GB"),
        ("NVIDIA RTX 4000 SFF Ada Generation", None, "runpod", "RTX4000SFFADA-20GB"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", None, "runpod", "RTXPRO6000-96GB"),
        ("Tesla V100-SXM2-16GB", None, "runpod", "V100-SXM-16GB"),
        # Vast.ai (§B.1 and the cassette), gpu_ram in MiB / 1024
        ("H100 SXM", 81559 / 1024, "vastai", "H100-SXM-80GB"),
        ("H100 PCIE", 81559 / 1024, "vastai", "H100-PCIE-80GB"),
        ("RTX 4090", 24564 / 1024, "vastai", "RTX4090-24GB"),
        ("A100 SXM4", 40960 / 1024, "vastai", "A100-SXM-40GB"),
        ("A100 SXM4", 81920 / 1024, "vastai", "A100-SXM-80GB"),
        ("A100 PCIE", 40960 / 1024, "vastai", "A100-PCIE-40GB"),
        ("RTX A6000", 49140 / 1024, "vastai", "RTXA6000-48GB"),
        ("H200", 143771 / 1024, "vastai", "H200-SXM-141GB"),
        ("RTX 5090", 32607 / 1024, "vastai", "RTX5090-32GB"),
        ("Q RTX 8000", 49152 / 1024, "vastai", "QRTX8000-48GB"),
        ("RTX 6000Ada", None, "vastai", "RTX6000ADA-48GB"),
        # Lambda descriptions (§B.3), count included
        ("1x H100 (80 GB SXM5)", None, "lambda", "H100-SXM-80GB"),
        ("8x A100 (80 GB SXM4)", None, "lambda", "A100-SXM-80GB"),
        ("1x RTX 6000 (24 GB)", None, "lambda", "QRTX6000-24GB"),
        ("1x GH200 (96 GB)", None, "lambda", "GH200-96GB"),
        # Verda, Crusoe, DigitalOcean, Azure, AWS, GCP, OCI, others
        ("1x H100 SXM5 80GB", 80, "verda", "H100-SXM-80GB"),
        ("2x RTX A6000 48GB", 48, "verda", "RTXA6000-48GB"),
        ("8x B300 SXM6 262GB", 262, "verda", "B300-SXM-288GB"),
        ("H100-SXM-80GB", None, "crusoe", "H100-SXM-80GB"),
        ("GB200-NVL-186GB", None, "crusoe", "GB200-186GB"),
        ("MI355X_288GB", None, "crusoe", "MI355X-288GB"),
        ("nvidia_h100", 640 / 8, "digitalocean", "H100-SXM-80GB"),
        ("amd_mi300x", 1536 / 8, "digitalocean", "MI300X-192GB"),
        ("nvidia_rtx6000_ada", None, "digitalocean", "RTX6000ADA-48GB"),
        ("Standard_NC24ads_A100_v4", None, "azure", "A100-PCIE-80GB"),
        ("NC24ads A100 v4", None, "azure", "A100-PCIE-80GB"),
        ("Standard_ND96isr_H100_v5", None, "azure", "H100-SXM-80GB"),
        ("Standard_NC40ads_H100_v5", None, "azure", "H100-NVL-94GB"),
        ("Standard_ND96asr_v4", None, "azure", "A100-SXM-40GB"),
        ("A10G", 24576 / 1024, "aws", "A10G-24GB"),
        ("H100", 80, "aws", "H100-SXM-80GB"),
        ("A100", 40960 / 1024, "aws", "A100-SXM-40GB"),
        ("A100", 81920 / 1024, "aws", "A100-SXM-80GB"),
        ("V100", 32, "aws", "V100-SXM-32GB"),
        ("L4", 22888 / 1024, "aws", "L4-24GB"),
        ("nvidia-tesla-a100", None, "gcp", "A100-SXM-40GB"),
        ("nvidia-h100-80gb", None, "gcp", "H100-SXM-80GB"),
        ("nvidia-h100-mega-80gb", None, "gcp", "H100-SXM-80GB"),
        ("nvidia-a100-80gb", None, "gcp", "A100-SXM-80GB"),
        ("nvidia-l4", None, "gcp", "L4-24GB"),
        ("BM.GPU.H100.8", None, "oci", "H100-SXM-80GB"),
        ("BM.GPU4.8", None, "oci", "A100-SXM-40GB"),
        ("BM.GPU.A100-v2.8", None, "oci", "A100-SXM-80GB"),
        ("VM.GPU.A10.2", None, "oci", "A10-24GB"),
        ("BM.GPU.L40S.4", None, "oci", "L40S-48GB"),
        ("H100_SXM5_80GB", None, "fluidstack", "H100-SXM-80GB"),
        ("Tesla_V100_PCIE_16GB", None, "fluidstack", "V100-PCIE-16GB"),
        ("H100-80G-PCIe", None, "hyperstack", "H100-PCIE-80GB"),
        ("geforcertx4090-pcie-24gb", None, "tensordock", "RTX4090-24GB"),
        ("RTX-PRO6000", 96, "jarvislabs", "RTXPRO6000-96GB"),
        ("rtx 6000 24gb", None, "seeweb", "QRTX6000-24GB"),
        ("NVIDIA A100 80GB PCle", None, None, "A100-PCIE-80GB"),  # sic
    ],
)
def test_provider_names_map_to_the_right_card(
    raw: str, memory_gb: float | None, provider: str | None, expected: str
) -> None:
    assert CATALOG.normalize(raw, memory_gb=memory_gb, provider=provider).id == expected


# Names in no table: the parser handles them from model + form factor + memory.
@pytest.mark.parametrize(
    ("raw", "memory_gb", "expected"),
    [
        ("NVIDIA A100-SXM4-40GB", None, "A100-SXM-40GB"),
        ("NVIDIA A100-PCIE-40GB", None, "A100-PCIE-40GB"),
        ("A100 80GB SXM4", None, "A100-SXM-80GB"),
        ("a100sxm4 80gb", None, "A100-SXM-80GB"),
        ("A100-80G-PCIe", None, "A100-PCIE-80GB"),
        ("H100", 95830 / 1024, "H100-NVL-94GB"),  # only the NVL has ~94 GB
        ("H100NVL", None, "H100-NVL-94GB"),
        ("NVIDIA H100 SXM5 80 GB", None, "H100-SXM-80GB"),
        ("H100 80GB HBM3", None, "H100-SXM-80GB"),
        ("H200 NVL", 141, "H200-NVL-141GB"),
        ("Tesla V100 SXM2 16GB", None, "V100-SXM-16GB"),
        ("Tesla_V100_SXM2_32GB", None, "V100-SXM-32GB"),
        ("GeForce RTX 3080 Ti", None, "RTX3080TI-12GB"),
        ("rtx_4080_super", None, "RTX4080SUPER-16GB"),
        ("RTX PRO 6000 Blackwell", None, "RTXPRO6000-96GB"),
        ("RTX 5000 Ada", None, "RTX5000ADA-32GB"),
        ("HGX B200", None, "B200-SXM-180GB"),
        ("B200", 192, "B200-SXM-180GB"),
        ("GB200 NVL72", None, "GB200-186GB"),
        ("GH200", 141, "GH200-144GB"),
        ("Intel Gaudi 2", None, "GAUDI2-96GB"),
        ("Instinct MI325X", 256, "MI325X-256GB"),
        ("MI 300X", None, "MI300X-192GB"),
        ("L40S (compute mode)", None, "L40S-48GB"),
    ],
)
def test_parser_handles_unlisted_spellings(raw: str, memory_gb: float | None, expected: str) -> None:
    assert CATALOG.normalize(raw, memory_gb=memory_gb).id == expected


# --- human queries --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("H100-SXM-80GB", ["H100-SXM-80GB"]),
        ("h100-pcie-80gb", ["H100-PCIE-80GB"]),
        ("H100", ["H100-PCIE-80GB", "H100-SXM-80GB", "H100-NVL-94GB"]),
        ("h100", ["H100-PCIE-80GB", "H100-SXM-80GB", "H100-NVL-94GB"]),
        ("h100 sxm", ["H100-SXM-80GB"]),
        ("H100 NVL", ["H100-NVL-94GB"]),
        ("A100 40GB", ["A100-PCIE-40GB", "A100-SXM-40GB"]),
        ("H100 80GB", ["H100-PCIE-80GB", "H100-SXM-80GB"]),
        ("NVIDIA H100 80GB HBM3", ["H100-SXM-80GB"]),
        ("A100", ["A100-PCIE-40GB", "A100-SXM-40GB", "A100-PCIE-80GB", "A100-SXM-80GB"]),
        ("a100 sxm", ["A100-SXM-40GB", "A100-SXM-80GB"]),
        ("RTX 4090", ["RTX4090-24GB"]),
        ("4090", ["RTX4090-24GB"]),
        ("rtx4090", ["RTX4090-24GB"]),
        ("H200", ["H200-SXM-141GB", "H200-NVL-141GB"]),
        ("GH200", ["GH200-96GB", "GH200-144GB"]),
        ("V100 32GB", ["V100-SXM-32GB", "V100-PCIE-32GB"]),
        ("A6000", ["RTXA6000-48GB"]),
        ("rtx 6000 ada", ["RTX6000ADA-48GB"]),
        ("L40S", ["L40S-48GB"]),
        ("mi300x", ["MI300X-192GB"]),
        ("gaudi 3", ["GAUDI3-128GB"]),
    ],
)
def test_resolve_human_queries(query: str, expected: list[str]) -> None:
    assert ids(CATALOG.resolve(query)) == expected


@pytest.mark.parametrize("family", CATALOG.families())
def test_family_query_returns_all_variants(family: str) -> None:
    expected = [s.id for s in CATALOG.all() if s.family == family]
    assert ids(CATALOG.resolve(family)) == expected
    assert ids(CATALOG.resolve(family.lower())) == expected


# --- ambiguity and unknown names -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "memory_gb", "provider", "candidates"),
    [
        ("A100", None, None, {"A100-PCIE-40GB", "A100-SXM-40GB", "A100-PCIE-80GB", "A100-SXM-80GB"}),
        ("A100", 80, None, {"A100-PCIE-80GB", "A100-SXM-80GB"}),
        ("H100 80GB", None, None, {"H100-SXM-80GB", "H100-PCIE-80GB"}),
        ("H100", 80, None, {"H100-SXM-80GB", "H100-PCIE-80GB"}),
        ("H200", 141, None, {"H200-SXM-141GB", "H200-NVL-141GB"}),
        ("NVIDIA H200", 141, None, {"H200-SXM-141GB", "H200-NVL-141GB"}),  # RunPod's convention only
        ("H100", 80, "runpod", {"H100-SXM-80GB", "H100-PCIE-80GB"}),  # another provider's convention
        ("nvidia_h100", 80, None, {"H100-SXM-80GB", "H100-PCIE-80GB"}),
        ("Tesla V100", 16384 / 1024, "vastai", {"V100-SXM-16GB", "V100-PCIE-16GB"}),
        ("8x Tesla V100 (16 GB)", None, None, {"V100-SXM-16GB", "V100-PCIE-16GB"}),
        ("1x Tesla V100 16GB", 16, "verda", {"V100-SXM-16GB", "V100-PCIE-16GB"}),
        ("h100 80gb", None, "seeweb", {"H100-SXM-80GB", "H100-PCIE-80GB"}),
        ("h200 141gb", None, "seeweb", {"H200-SXM-141GB", "H200-NVL-141GB"}),
        ("A100-80GB", 80, "jarvislabs", {"A100-PCIE-80GB", "A100-SXM-80GB"}),
        ("H100_NVLINK_80GB", None, None, {"H100-SXM-80GB", "H100-PCIE-80GB"}),
        ("A100_NVLINK_80GB", None, None, {"A100-PCIE-80GB", "A100-SXM-80GB"}),
        ("NVIDIA_A100", 80, "vultr", {"A100-PCIE-80GB", "A100-SXM-80GB"}),
        ("A100", None, "aws", {"A100-SXM-40GB", "A100-SXM-80GB"}),
        ("H100 GPU - 8X", 80, None, {"H100-SXM-80GB", "H100-PCIE-80GB"}),  # the count is not a model
        ("nvidia-tesla-a100", None, None, {"A100-PCIE-40GB", "A100-SXM-40GB", "A100-PCIE-80GB", "A100-SXM-80GB"}),
    ],
)
def test_ambiguous_names_raise_with_candidates(
    raw: str, memory_gb: float | None, provider: str | None, candidates: set[str]
) -> None:
    with pytest.raises(AmbiguousGpuName) as info:
        CATALOG.normalize(raw, memory_gb=memory_gb, provider=provider)
    assert set(info.value.candidates) == candidates
    assert info.value.raw == raw
    message = str(info.value)
    assert raw in message and all(c in message for c in candidates)


def test_provider_convention_never_overrides_a_stated_form_factor() -> None:
    assert CATALOG.normalize("A100 80GB", provider="aws").id == "A100-SXM-80GB"  # convention fills it in
    assert CATALOG.normalize("A100 PCIe 80GB", provider="aws").id == "A100-PCIE-80GB"
    assert CATALOG.normalize("H100 NVL", provider="digitalocean").id == "H100-NVL-94GB"


def test_ambiguity_message_says_what_is_missing() -> None:
    with pytest.raises(AmbiguousGpuName, match="form factor"):
        CATALOG.normalize("H100 80GB")
    with pytest.raises(AmbiguousGpuName, match=r"memory size$"):
        CATALOG.normalize("A100 SXM4")
    with pytest.raises(AmbiguousGpuName, match="memory size and form factor"):
        CATALOG.normalize("A100")


@pytest.mark.parametrize(
    "raw",
    [
        # (K80, P4, P100, Radeon Pro V520 and the V100 FHHL were here until catalogued: test_new_cards.py;
        # the A800 and RTX 3060 likewise: test_issue14_cards.py)
        "Tesla K40m",
        "Tesla P40",
        "Tesla M40",
        "A100X",
        "RTX 4090 Ti",
        "Radeon Pro V620",
        "T4g",
        "AMD 7900XTX",
        "Quadro_RTX_5000_16GB",
        "NVIDIA",
        "Gaudi HL-205",
        "RTX PRO 4000 Blackwell SFF",
        "MI250",
        "tpu-v5p",
        "H100-MEGA",
    ],
)
def test_uncatalogued_names_are_unknown(raw: str) -> None:
    with pytest.raises(UnknownGpuName) as info:
        CATALOG.normalize(raw)
    assert info.value.raw == raw
    assert raw in str(info.value)
    with pytest.raises(UnknownGpuName):
        CATALOG.resolve(raw)


def test_unknown_names_carry_suggestions() -> None:
    with pytest.raises(UnknownGpuName) as info:
        CATALOG.resolve("H10")
    assert "H100" in info.value.suggestions
    assert "H100" in str(info.value)
    with pytest.raises(UnknownGpuName) as info:
        CATALOG.normalize("RTX 4090 Ti")
    assert "RTX4090" in info.value.suggestions
    with pytest.raises(UnknownGpuName) as info:
        CATALOG.resolve("")
    assert info.value.suggestions == []


def test_memory_that_fits_no_variant_is_unknown_not_snapped() -> None:
    with pytest.raises(UnknownGpuName) as info:
        CATALOG.normalize("NVIDIA_A100", memory_gb=4)  # a Vultr fractional slice
    assert set(info.value.suggestions) == {s.id for s in CATALOG.resolve("A100")}
    assert "~4 GB" in str(info.value)
    with pytest.raises(UnknownGpuName):
        CATALOG.normalize("A100 SXM4", memory_gb=60)  # 25 % from both sizes
    for raw, memory in (("H100 PCIe", 72), ("RTX 4090", 21), ("L40S", 43)):  # 10-13 % off: outside ±7 %
        with pytest.raises(UnknownGpuName):
            CATALOG.normalize(raw, memory_gb=memory)
    with pytest.raises(UnknownGpuName, match="SXM"):
        CATALOG.normalize("RTX 4090 SXM")
    with pytest.raises(UnknownGpuName):
        CATALOG.resolve("H100 40GB")


def test_errors_are_value_errors_for_callers_that_catch_broadly() -> None:
    assert issubclass(UnknownGpuName, GpuNameError) and issubclass(AmbiguousGpuName, GpuNameError)
    assert issubclass(GpuNameError, ValueError)


# --- memory snapping -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "memory_gb", "expected"),
    [
        ("H100 SXM", 81559 / 1024, "H100-SXM-80GB"),  # Vast gpu_ram 81559 MB
        ("H100 SXM", 81559 / 1000, "H100-SXM-80GB"),  # same figure read as decimal GB
        ("A100 SXM4", 40960 / 1024, "A100-SXM-40GB"),  # 40960 MiB
        ("A100 SXM4", 42.9, "A100-SXM-40GB"),  # 40 GiB written as decimal GB (7.4 % high)
        ("H100 SXM", 85.9, "H100-SXM-80GB"),  # 80 GiB written as decimal GB
        ("H100", 100.9, "H100-NVL-94GB"),  # 94 GiB written as decimal GB
        ("A100 PCIe", 79.2, "A100-PCIE-80GB"),  # usable after ECC
        ("H100", 88, "H100-NVL-94GB"),  # 6 % from 94, 10 % from 80
        ("H100 PCIe", 85, "H100-PCIE-80GB"),
        ("B300", 268, "B300-SXM-288GB"),  # within 7 %
        ("B300", 262.5, "B300-SXM-288GB"),  # outside 7 %, but a size providers report for it
        ("L4", 22888 / 1024, "L4-24GB"),  # AWS's L4 figure
    ],
)
def test_memory_snaps_to_a_known_size(raw: str, memory_gb: float, expected: str) -> None:
    assert CATALOG.normalize(raw, memory_gb=memory_gb).id == expected


@pytest.mark.parametrize("memory_gb", [81559, 0, -80, float("nan")])
def test_memory_in_wrong_units_is_rejected(memory_gb: float) -> None:
    with pytest.raises(GpuNameError, match="memory_gb"):
        CATALOG.normalize("H100 SXM", memory_gb=memory_gb)


# --- data validation -------------------------------------------------------------------------------

GOOD_CARD = """
[[gpu]]
id = "X100-SXM-80GB"
family = "X100"
vendor = "nvidia"
name = "X100 SXM 80GB"
memory_gb = 80
form_factor = "SXM"
architecture = "hopper"
bandwidth_tbs = 3.0
bf16_tflops = 900
tdp_w = 700
interconnect = "nvlink"
aliases = ["X100 SXM"]
"""


def test_minimal_catalog_loads() -> None:
    catalog = GpuCatalog.from_toml(GOOD_CARD)
    assert catalog.normalize("x100 sxm").id == "X100-SXM-80GB"
    assert catalog.get("X100-SXM-80GB").fp8_tflops is None


@pytest.mark.parametrize(
    ("broken", "complaint"),
    [
        (GOOD_CARD + GOOD_CARD, r"'X100-SXM-80GB': duplicate id"),
        (GOOD_CARD.replace("bf16_tflops = 900", "bf16_tflops = -1"), r"X100-SXM-80GB\)\.bf16_tflops"),
        (GOOD_CARD.replace("bf16_tflops = 900", 'bf16_tflops = "900"'), r"X100-SXM-80GB\)\.bf16_tflops"),
        (GOOD_CARD.replace("tdp_w = 700", "tdp_w = 700.5"), r"X100-SXM-80GB\)\.tdp_w"),
        (GOOD_CARD.replace('vendor = "nvidia"\n', ""), r"X100-SXM-80GB\): missing required field.*vendor"),
        (GOOD_CARD + "speed = 3\n", r"X100-SXM-80GB\): unknown field.*speed"),
        (GOOD_CARD.replace('"nvlink"', '"infiniband"'), r"X100-SXM-80GB\)\.interconnect: 'infiniband'"),
        (GOOD_CARD.replace('form_factor = "SXM"', 'form_factor = "sxm"'), r"X100-SXM-80GB\)\.form_factor"),
        (GOOD_CARD.replace("memory_gb = 80", "memory_gb = 96"), r"X100-SXM-80GB\): id must end with .*-96GB"),
        (GOOD_CARD.replace('family = "X100"', 'family = "Y100"'), r"X100-SXM-80GB\): id must start with.*Y100"),
        (GOOD_CARD + '\n[raw_names.acme]\n"X100 thing" = "X100-SXM-94GB"\n', r"acme 'X100 thing'.*not a card id"),
        (GOOD_CARD + '\n[raw_names.acme]\n"X100" = ["X100-SXM-80GB"]\n', r"acme 'X100'.*one card"),
        (GOOD_CARD + '\n[family_aliases]\nZ100 = ["Z"]\n', r"family_aliases\.Z100: no such family"),
        (GOOD_CARD + "\n[extras]\nx = 1\n", r"unknown top-level.*extras"),
        ("[[gpu]\n", r"^gpus\.toml: "),
    ],
)
def test_bad_data_fails_loudly_naming_the_entry(broken: str, complaint: str) -> None:
    with pytest.raises(GpuCatalogError, match=complaint):
        GpuCatalog.from_toml(broken)


def test_alias_conflict_names_both_entries() -> None:
    other = GOOD_CARD.replace("X100-SXM-80GB", "X200-SXM-80GB").replace('"X100"', '"X200"')
    with pytest.raises(GpuCatalogError) as info:
        GpuCatalog.from_toml(GOOD_CARD + other)
    message = str(info.value)
    assert "X100-SXM-80GB" in message and "X200-SXM-80GB" in message and "X100 SXM" in message


@pytest.mark.parametrize(
    ("raw", "provider", "expected"),
    [
        ("Tesla V100 (16 GB)", "lambdalabs", "V100-SXM-16GB"),
        ("A100_NVLINK_80GB", "fluidstack", "A100-SXM-80GB"),
        ("H100_NVLINK_80GB", "fluidstack", "H100-SXM-80GB"),
    ],
)
def test_provider_conventions_settle_names_only_for_that_provider(raw, provider, expected):
    assert get_catalog().normalize(raw, provider=provider).id == expected
    with pytest.raises(AmbiguousGpuName):
        get_catalog().normalize(raw)
