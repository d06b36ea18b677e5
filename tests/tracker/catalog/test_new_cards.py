"""Cards added for issue #12 item 7 (names real responses carried that the catalog lacked), MIG slices,
multi-GPU boards, and the efficiency class every card's estimate rests on."""

from __future__ import annotations

import math

import pytest

from providers.registry import all_providers
from tracker.catalog.gpus import (
    AmbiguousGpuName,
    GpuCatalog,
    GpuCatalogError,
    GpuSpec,
    MigSliceName,
    UnknownGpuName,
    get_catalog,
)
from tracker.estimate import get_assumptions, make_job, prepare
from tracker.estimate.assumptions import efficiency_class, priors

CATALOG = get_catalog()

# id -> (family, memory GB, form factor, architecture, has FP8)
NEW_CARDS: dict[str, tuple[str, float, str, str, bool]] = {
    "RTXPRO4000-24GB": ("RTXPRO4000", 24, "PCIe", "blackwell", True),
    "RTXPRO5000-48GB": ("RTXPRO5000", 48, "PCIe", "blackwell", True),
    "RTXA2000-6GB": ("RTXA2000", 6, "PCIe", "ampere", False),
    "RTXA2000-12GB": ("RTXA2000", 12, "PCIe", "ampere", False),
    "RTX3080-12GB": ("RTX3080", 12, "consumer", "ampere", False),
    "V100FHHL-16GB": ("V100FHHL", 16, "PCIe", "volta", False),
    "P100-PCIE-12GB": ("P100", 12, "PCIe", "pascal", False),
    "P100-PCIE-16GB": ("P100", 16, "PCIe", "pascal", False),
    "P100-SXM-16GB": ("P100", 16, "SXM", "pascal", False),
    "P4-8GB": ("P4", 8, "PCIe", "pascal", False),
    "K80-12GB": ("K80", 12, "PCIe", "kepler", False),
    "M60-8GB": ("M60", 8, "PCIe", "maxwell", False),
    "A2-16GB": ("A2", 16, "PCIe", "ampere", False),
    "V520-8GB": ("V520", 8, "PCIe", "rdna1", False),
    "RTX3060TI-8GB": ("RTX3060TI", 8, "consumer", "ampere", False),
    "GTX1080TI-11GB": ("GTX1080TI", 11, "consumer", "pascal", False),
}


def ids(specs: list[GpuSpec]) -> list[str]:
    return [s.id for s in specs]


# --- the cards and their specs ---------------------------------------------------------------------


@pytest.mark.parametrize("gpu_id", NEW_CARDS)
def test_new_card_specs_are_present_and_plausible(gpu_id: str) -> None:
    family, memory, form_factor, architecture, has_fp8 = NEW_CARDS[gpu_id]
    spec = CATALOG.get(gpu_id)
    assert (spec.family, spec.memory_gb, spec.form_factor, spec.architecture) == (
        family,
        memory,
        form_factor,
        architecture,
    )
    assert spec.id.endswith(f"-{spec.memory_gb:g}GB")
    assert spec.bandwidth_tbs > 0 and spec.bf16_tflops > 0 and spec.tdp_w and spec.tdp_w > 0
    assert (spec.fp8_tflops is not None) == has_fp8
    if spec.fp8_tflops is not None:
        assert spec.fp8_tflops == pytest.approx(2 * spec.bf16_tflops)
    # FLOPs per byte of bandwidth within what real cards span (a unit slip is 1000x off)
    assert 5 < spec.bf16_tflops / spec.bandwidth_tbs < 600
    assert spec.notes and ("[V]" in spec.notes or "[R]" in spec.notes)  # every card says where its figures come from


def test_spec_spot_checks() -> None:
    get = CATALOG.get
    # Cards without BF16 carry the fastest rate a run can use: FP16 where it is 2x FP32, else FP32.
    assert get("P100-SXM-16GB").bf16_tflops == 21.2 and get("P100-PCIE-16GB").bf16_tflops == 18.7
    assert get("P4-8GB").bf16_tflops == 5.5 and get("GTX1080TI-11GB").bf16_tflops == 11.3
    assert get("K80-12GB").bf16_tflops == 4.37  # one GK210: half the board's 8.73
    assert get("M60-8GB").bf16_tflops == 4.8  # one GM204: half the board's ~9.6
    # Same silicon, different memory systems
    assert get("P100-PCIE-12GB").bandwidth_tbs < get("P100-PCIE-16GB").bandwidth_tbs == 0.732
    assert get("RTX3080-12GB").bandwidth_tbs > get("RTX3080-10GB").bandwidth_tbs
    assert get("RTXA2000-6GB").bf16_tflops == get("RTXA2000-12GB").bf16_tflops
    # The FHHL board is the slowest V100
    assert get("V100FHHL-16GB").bf16_tflops < get("V100-PCIE-16GB").bf16_tflops < get("V100-SXM-16GB").bf16_tflops
    assert get("V100FHHL-16GB").tdp_w == 150
    # RTX PRO Blackwell line-up is ordered
    assert (
        get("RTXPRO4000-24GB").bf16_tflops
        < get("RTXPRO4500-32GB").bf16_tflops
        < get("RTXPRO5000-48GB").bf16_tflops
        < get("RTXPRO6000-96GB").bf16_tflops
    )
    assert get("V520-8GB").vendor == "amd"


# --- every listed spelling resolves to the right card -------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "memory_gb", "provider", "expected"),
    [
        # RTX PRO Blackwell workstation cards
        ("NVIDIA RTX PRO 4000 Blackwell", None, "runpod", "RTXPRO4000-24GB"),
        ("RTX PRO 4000", None, None, "RTXPRO4000-24GB"),
        ("NVIDIA RTX PRO 4500 Blackwell", None, "runpod", "RTXPRO4500-32GB"),
        ("RTX PRO 4500", 32, "aws", "RTXPRO4500-32GB"),
        ("NVIDIA RTX PRO 5000 Blackwell", None, None, "RTXPRO5000-48GB"),
        ("RTX PRO 5000", 48, None, "RTXPRO5000-48GB"),
        # RTX A2000: the memory, or the 12 GB card's own device name, picks
        ("NVIDIA RTX A2000", 6, "runpod", "RTXA2000-6GB"),
        ("NVIDIA RTX A2000", 12, "runpod", "RTXA2000-12GB"),
        ("NVIDIA RTX A2000 12GB", None, None, "RTXA2000-12GB"),
        ("RTX A2000 6GB", None, None, "RTXA2000-6GB"),
        # RTX 3080: one device name for both memory sizes
        ("RTX 3080", 10, None, "RTX3080-10GB"),
        ("RTX 3080", 12, None, "RTX3080-12GB"),
        ("NVIDIA GeForce RTX 3080", 10, "runpod", "RTX3080-10GB"),
        ("NVIDIA GeForce RTX 3080", 12, "runpod", "RTX3080-12GB"),
        ("RTX 3080 12GB", None, None, "RTX3080-12GB"),
        ("RTX_3080_10GB", None, "fluidstack", "RTX3080-10GB"),
        ("geforcertx3080-pcie-10gb", None, "tensordock", "RTX3080-10GB"),
        # V100 FHHL
        ("Tesla V100-FHHL-16GB", None, "runpod", "V100FHHL-16GB"),
        ("V100-16GB-FHHL", None, None, "V100FHHL-16GB"),
        ("V100 FHHL", 16, None, "V100FHHL-16GB"),
        # Pascal / Maxwell / Kepler / AMD / GeForce
        ("Tesla P100-PCIE-16GB", None, None, "P100-PCIE-16GB"),
        ("Tesla P100-PCIE-12GB", None, None, "P100-PCIE-12GB"),
        ("Tesla P100-SXM2-16GB", None, None, "P100-SXM-16GB"),
        ("P100 PCIe 16GB", 16, "gcp", "P100-PCIE-16GB"),
        ("nvidia-tesla-p100", None, "gcp", "P100-PCIE-16GB"),
        ("Tesla P4", None, None, "P4-8GB"),
        ("P4 8GB", 8, "gcp", "P4-8GB"),
        ("nvidia-tesla-p4", None, "gcp", "P4-8GB"),
        ("Tesla K80", None, None, "K80-12GB"),
        ("K80", None, "gcp", "K80-12GB"),
        ("nvidia-tesla-k80", 12, None, "K80-12GB"),
        ("Tesla M60", None, None, "M60-8GB"),
        ("Tesla M60 8GB", 8, "azure", "M60-8GB"),
        ("NVIDIA A2", None, None, "A2-16GB"),
        ("A2", 16, "vultr", "A2-16GB"),
        ("Radeon Pro V520 8GB", 8, "aws", "V520-8GB"),
        ("AMD Radeon Pro V520", None, None, "V520-8GB"),
        ("RTX 3060 Ti", None, None, "RTX3060TI-8GB"),
        ("NVIDIA GeForce RTX 3060 Ti PCIe 8GB", 8, "tensordock", "RTX3060TI-8GB"),
        ("geforcertx3060ti-pcie-8gb", None, "tensordock", "RTX3060TI-8GB"),
        ("GTX 1080 Ti", 11, "runpod", "GTX1080TI-11GB"),
        ("NVIDIA GeForce GTX 1080 Ti", None, None, "GTX1080TI-11GB"),
        # NVL: the H100 and H200 parts stay apart; H200 NVL reported as 143 GB (143771 MiB / 1000)
        ("H100 NVL", None, None, "H100-NVL-94GB"),
        ("NVIDIA H100 NVL", 94, "runpod", "H100-NVL-94GB"),
        ("H200 NVL", None, None, "H200-NVL-141GB"),
        ("H200 NVL", 143, "vastai", "H200-NVL-141GB"),
        ("NVIDIA H200 NVL", 143771 / 1000, None, "H200-NVL-141GB"),
        # GB300: the per-GPU card, whatever the rack is called
        ("GB300", None, None, "GB300-288GB"),
        ("GB300 NVL72", None, None, "GB300-288GB"),
        ("Standard_ND128isr_GB300_v6", None, "azure", "GB300-288GB"),
    ],
)
def test_listed_spellings_resolve(raw: str, memory_gb: float | None, provider: str | None, expected: str) -> None:
    assert CATALOG.normalize(raw, memory_gb=memory_gb, provider=provider).id == expected


def test_h100_nvl_and_h200_nvl_never_swap() -> None:
    with pytest.raises(UnknownGpuName):
        CATALOG.normalize("H100 NVL", memory_gb=141)
    with pytest.raises(UnknownGpuName):
        CATALOG.normalize("H200 NVL", memory_gb=94)


@pytest.mark.parametrize(
    ("raw", "memory_gb", "candidates"),
    [
        ("RTX 3080", None, {"RTX3080-10GB", "RTX3080-12GB"}),
        ("NVIDIA GeForce RTX 3080", None, {"RTX3080-10GB", "RTX3080-12GB"}),
        ("NVIDIA RTX A2000", None, {"RTXA2000-6GB", "RTXA2000-12GB"}),
        ("Tesla P100", None, {"P100-PCIE-12GB", "P100-PCIE-16GB", "P100-SXM-16GB"}),
        ("P100 16GB", None, {"P100-PCIE-16GB", "P100-SXM-16GB"}),  # OCI: form factor open
        # The FHHL is its own family: the V100 question is what it was
        ("Tesla V100", 16, {"V100-SXM-16GB", "V100-PCIE-16GB"}),
    ],
)
def test_new_ambiguities(raw: str, memory_gb: float | None, candidates: set[str]) -> None:
    with pytest.raises(AmbiguousGpuName) as info:
        CATALOG.normalize(raw, memory_gb=memory_gb)
    assert set(info.value.candidates) == candidates


def test_family_queries_cover_the_new_variants() -> None:
    assert ids(CATALOG.resolve("RTX 3080")) == ["RTX3080-10GB", "RTX3080-12GB"]
    assert ids(CATALOG.resolve("P100")) == ["P100-PCIE-12GB", "P100-PCIE-16GB", "P100-SXM-16GB"]
    assert ids(CATALOG.resolve("A2000")) == ["RTXA2000-6GB", "RTXA2000-12GB"]
    assert "V100FHHL-16GB" not in ids(CATALOG.resolve("V100"))


@pytest.mark.parametrize(
    "raw",
    [
        "RTX PRO 5000 72GB Blackwell",  # the 72 GB card is not catalogued: never the 48 GB one
        "RTX PRO 4000 Blackwell SFF",  # the 70 W SFF card is not the 140 W one
        "RTX 3080 16GB",
    ],
)
def test_near_misses_stay_unknown(raw: str) -> None:
    with pytest.raises(UnknownGpuName):
        CATALOG.normalize(raw)


# --- boards with several GPUs -----------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "board_gb"), [("Tesla K80", 24), ("Tesla M60", 16)])
def test_multi_gpu_boards_count_gpus(raw: str, board_gb: float) -> None:
    """One card per GPU: a K80 board is two 12 GB cards. A whole board's memory fits no card, so a listing
    that counts boards is set aside instead of being priced as one GPU."""
    spec = CATALOG.normalize(raw)
    assert spec.memory_gb == board_gb / 2
    with pytest.raises(UnknownGpuName):
        CATALOG.normalize(raw, memory_gb=board_gb)


# --- the bundled cassettes ---------------------------------------------------------------------------

# Names the bundled cassettes carried that were reported unknown before these cards (spellings move as the
# adapters change: RunPod's "GTX 1080 Ti" became its device name "NVIDIA GeForce GTX 1080 Ti"), and the card
# each now lands on.
WERE_UNKNOWN: dict[str, dict[str, str]] = {
    "aws": {"Radeon Pro V520 8GB": "V520-8GB"},
    "azure": {"Tesla M60 8GB": "M60-8GB"},
    "gcp": {"K80": "K80-12GB", "P100 PCIe 16GB": "P100-PCIE-16GB", "P4 8GB": "P4-8GB"},
    "oci": {"P100 16GB": "P100-PCIE-16GB"},  # PCIe or SXM2 not said: the slowest, as ingest assumes
    "runpod": {"GTX 1080 Ti": "GTX1080TI-11GB"},
    "vastai": {"GTX 1080 Ti": "GTX1080TI-11GB"},
    "tensordock": {"NVIDIA GeForce RTX 3060 Ti PCIe 8GB": "RTX3060TI-8GB"},
    "vultr": {"A2": "A2-16GB"},
}


@pytest.mark.parametrize("provider", sorted(WERE_UNKNOWN))
def test_names_in_bundled_cassettes_now_resolve(provider: str) -> None:
    # Imported here: tests/providers registers these helpers for assertion rewriting before they are imported.
    from tests.factories.cassettes import replay, resolve_all

    result = replay(all_providers()[provider])
    resolved, unknown = resolve_all(result, provider)
    for raw, card in WERE_UNKNOWN[provider].items():
        if raw != "P100 16GB":  # that one is settled by ingest's slowest-variant rule, not by the name
            assert CATALOG.normalize(raw, provider=provider).id == card
        assert card in resolved.values(), f"{card} absent from {provider}; unknown: {unknown}"
    # None of this batch's names is one of the new cards' spellings left unresolved
    new_families = {CATALOG.get(c).family.lower() for c in WERE_UNKNOWN[provider].values()}
    leftover = [n for n in unknown if any(f in n.lower().replace(" ", "") for f in new_families)]
    assert not leftover, {n: unknown[n] for n in leftover}


# --- MIG slices ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "card", "share", "memory_gb"),
    [
        ("NVIDIA A100-SXM4-80GB MIG 1g.10gb", "A100-SXM-80GB", (1, 7), 10),
        ("A100 80GB SXM MIG 2g.20gb", "A100-SXM-80GB", (2, 7), 20),
        ("A100 SXM4 80GB MIG 3g.40gb", "A100-SXM-80GB", (3, 7), 40),  # 3/7 of the compute, half the memory
        ("A100 SXM4 80GB MIG 4g.40gb", "A100-SXM-80GB", (4, 7), 40),
        ("A100 SXM4 80GB MIG 7g.80gb", "A100-SXM-80GB", (7, 7), 80),
        ("A100 80GB PCIe MIG 1g.20gb", "A100-PCIE-80GB", (1, 7), 20),
        ("A100-SXM4-40GB-MIG-1g.5gb", "A100-SXM-40GB", (1, 7), 5),  # GPU feature discovery's product label
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "H100-SXM-80GB", (1, 7), 10),
        ("H100 SXM mig-1g.20gb", "H100-SXM-80GB", (1, 7), 20),
        ("H100 SXM MIG 2g.20gb", "H100-SXM-80GB", (2, 7), 20),
        ("H100 SXM MIG 3g.40gb", "H100-SXM-80GB", (3, 7), 40),
        ("H100 SXM MIG 4g.40gb", "H100-SXM-80GB", (4, 7), 40),
        ("H100 SXM MIG 7g.80gb", "H100-SXM-80GB", (7, 7), 80),
        ("H100 PCIe MIG 1g.10gb+me", "H100-PCIE-80GB", (1, 7), 10),  # media extensions: the same share
        ("H100 NVL MIG 3g.47gb", "H100-NVL-94GB", (3, 7), 47),
        ("A30 MIG 2g.12gb", "A30-24GB", (2, 4), 12),
    ],
)
def test_mig_slice_is_a_fraction_of_its_card(raw: str, card: str, share: tuple[int, int], memory_gb: float) -> None:
    s = CATALOG.normalize_slice(raw)
    assert s.card.id == card
    assert s.fraction == pytest.approx(share[0] / share[1])
    assert s.memory_gb == memory_gb
    assert s.assumed is None


@pytest.mark.parametrize(
    ("raw", "card", "fraction", "memory_gb"),
    [
        # Only the family and the slice given: the slowest parent, said so (PCIe; 40 GB for 1g.10gb)
        ("A100 MIG 1g.10gb", "A100-PCIE-40GB", 1 / 7, 10),
        ("A100 MIG 2g.20gb", "A100-PCIE-80GB", 2 / 7, 20),
        ("A100 MIG 3g.40gb", "A100-PCIE-80GB", 3 / 7, 40),
        ("H100 MIG 1g.10gb", "H100-PCIE-80GB", 1 / 7, 10),
        ("NVIDIA H200 MIG 1g.18gb", "H200-NVL-141GB", 1 / 7, 18),
    ],
)
def test_mig_slice_with_open_parent_takes_the_slowest(raw: str, card: str, fraction: float, memory_gb: float) -> None:
    s = CATALOG.normalize_slice(raw)
    assert (s.card.id, s.memory_gb) == (card, memory_gb)
    assert s.fraction == pytest.approx(fraction)
    assert s.assumed and "slowest" in s.assumed


def test_mig_profiles_of_a_card() -> None:
    got = {(s.profile, round(s.fraction * 7), s.memory_gb) for s in CATALOG.slices_of("A100-SXM-80GB")}
    assert got == {
        ("1g.10gb", 1, 10),
        ("1g.20gb", 1, 20),
        ("2g.20gb", 2, 20),
        ("3g.40gb", 3, 40),
        ("4g.40gb", 4, 40),
        ("7g.80gb", 7, 80),
    }
    assert [s.profile for s in CATALOG.slices_of("H100-PCIE-80GB")] == [
        "1g.10gb",
        "1g.20gb",
        "2g.20gb",
        "3g.40gb",
        "4g.40gb",
        "7g.80gb",
    ]
    assert CATALOG.slices_of("L40S-48GB") == []
    for spec in CATALOG.all():
        for s in CATALOG.slices_of(spec.id):
            assert 0 < s.fraction <= 1 and 0 < s.memory_gb <= spec.memory_gb and s.card is spec


def test_mig_slice_memory_is_checked_against_the_slice() -> None:
    raw = "A100 SXM4 80GB MIG 1g.10gb"
    assert CATALOG.normalize_slice(raw, memory_gb=9728 / 1024).memory_gb == 10  # what the slice reports
    assert CATALOG.normalize_slice(raw, memory_gb=80).memory_gb == 10  # a listing that gives the card's
    with pytest.raises(UnknownGpuName):
        CATALOG.normalize_slice(raw, memory_gb=40)


@pytest.mark.parametrize(
    ("raw", "complaint"),
    [
        ("A100 MIG 2g.40gb", "not one of"),  # no such profile
        ("L40S MIG 1g.10gb", "not one of"),  # no MIG at all
        ("A100 SXM4 40GB MIG 1g.20gb", "not one of"),  # an 80 GB profile on a 40 GB card
        ("MIG 1g.10gb", "no card named"),
        ("H100 SXM", "not a MIG slice name"),
    ],
)
def test_bad_slice_names_are_unknown(raw: str, complaint: str) -> None:
    with pytest.raises(UnknownGpuName, match=complaint):
        CATALOG.normalize_slice(raw)


@pytest.mark.parametrize("raw", ["A100 MIG 1g.10gb", "NVIDIA A100-SXM4-80GB MIG 3g.40gb", "mig-1g.10gb H100 SXM"])
def test_whole_card_lookups_refuse_slices(raw: str) -> None:
    """normalize()/resolve() answer whole cards; a slice counted as one would list its price as the card's."""
    for lookup in (CATALOG.normalize, CATALOG.resolve):
        with pytest.raises(MigSliceName) as info:
            lookup(raw)
        assert isinstance(info.value, UnknownGpuName)  # every caller that sets unknown names aside does so here
        assert "normalize_slice" in str(info.value) and info.value.slices
        assert set(info.value.suggestions) == {s.card.id for s in info.value.slices}
    assert GpuCatalog.is_slice_name(raw) and not GpuCatalog.is_slice_name("A100 SXM4 80GB")


def test_ingest_prices_a_slice_named_offer_as_its_share_of_the_card() -> None:
    """A MIG slice is priced as what it is (the loose-ends issue): its share of the card, its own memory."""
    from decimal import Decimal

    from providers.contract import ScrapedOffer, ScrapeResult
    from tracker.config import Settings
    from tracker.ingest.validate import validate_batch

    offer = ScrapedOffer(
        key="mig",
        gpu_name="A100 MIG 1g.10gb",
        gpu_count=Decimal(1),
        gpu_memory_gb=Decimal(10),
        price_per_hour=Decimal("0.5"),
    )
    prepared = validate_batch(ScrapeResult(offers=[offer]), CATALOG, Settings(), "test")
    (valid,) = prepared.valid
    assert valid.gpu.family == "A100" and valid.scraped.gpu_count < 1 and valid.scraped.gpu_memory_gb == 10
    assert valid.scraped.attributes["mig_profile"] == "1g.10gb"


@pytest.mark.parametrize("assumptions", ["seed", "hf-peft", "optimized"])
@pytest.mark.parametrize(
    "raw",
    [
        "A100 SXM4 80GB MIG 1g.10gb",
        "A100 SXM4 80GB MIG 3g.40gb",
        "H100 SXM MIG 2g.20gb",
        "H100 SXM MIG 7g.80gb",
        "A30 MIG 1g.6gb",
    ],
)
def test_estimate_prices_a_slice_as_its_fraction_of_the_card(raw: str, assumptions: str) -> None:
    s = CATALOG.normalize_slice(raw)
    prepared = prepare(make_job("llama-3.2-1b", "qlora", tokens="1M"), assumptions)
    whole = prepared.on(s.card, price_per_gpu_hour="7.00")
    part = prepared.on(s.card, s.fraction, memory_gb=s.memory_gb, price_per_gpu_hour="7.00")
    assert part.tokens_per_second == pytest.approx(s.fraction * whole.tokens_per_second)
    assert part.memory_gb == s.memory_gb and part.vram_gb == whole.vram_gb
    assert part.fits == (whole.vram_gb <= s.memory_gb)
    assert part.price_per_hour is not None and whole.price_per_hour is not None
    assert float(part.price_per_hour) == pytest.approx(s.fraction * float(whole.price_per_hour), abs=1e-3)


# --- catalog data validation for [[mig]] --------------------------------------------------------------

CARD = """
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
"""


def test_mig_table_loads() -> None:
    catalog = GpuCatalog.from_toml(
        CARD + '[[mig]]\ncards = ["X100-SXM-80GB"]\ncompute_slices = 7\nprofiles = ["1g.10gb", "7g.80gb"]\n'
    )
    assert catalog.normalize_slice("X100 SXM MIG 1g.10gb").fraction == pytest.approx(1 / 7)


@pytest.mark.parametrize(
    ("mig", "complaint"),
    [
        ('cards = ["X100-SXM-94GB"]\ncompute_slices = 7\nprofiles = ["1g.10gb"]', r"not a card id"),
        ('cards = ["X100-SXM-80GB"]\ncompute_slices = 7\nprofiles = ["8g.80gb"]', r"more than 7 compute"),
        ('cards = ["X100-SXM-80GB"]\ncompute_slices = 7\nprofiles = ["1g.100gb"]', r"more memory than"),
        ('cards = ["X100-SXM-80GB"]\ncompute_slices = 7\nprofiles = ["1g10gb"]', r"not a <g>g.<memory>gb"),
        ('cards = ["X100-SXM-80GB"]\ncompute_slices = 7\nprofiles = ["1g.10gb", "1g.10gb"]', r"listed twice"),
        ('cards = ["X100-SXM-80GB"]\ncompute_slices = 1\nprofiles = ["1g.10gb"]', r"compute_slices"),
        ('cards = ["X100-SXM-80GB"]\nprofiles = ["1g.10gb"]', r"missing required field.*compute_slices"),
        ('cards = ["X100-SXM-80GB"]\ncompute_slices = 7\nprofiles = ["1g.10gb"]\nspeed = 1', r"unknown field"),
    ],
)
def test_bad_mig_data_fails_loudly(mig: str, complaint: str) -> None:
    with pytest.raises(GpuCatalogError, match=complaint):
        GpuCatalog.from_toml(CARD + "[[mig]]\n" + mig + "\n")


def test_a_card_gets_its_mig_profiles_once() -> None:
    entry = '[[mig]]\ncards = ["X100-SXM-80GB"]\ncompute_slices = 7\nprofiles = ["1g.10gb"]\n'
    with pytest.raises(GpuCatalogError, match="already has its MIG profiles"):
        GpuCatalog.from_toml(CARD + entry + entry)


# --- every card has an efficiency class, and every card gets an estimate --------------------------------

# Architectures with no prior of their own in assumptions.toml: they take its "default" prior (0.6 x the
# Ampere level), which is generous for the pre-tensor-core ones. Adding one here is a decision, not a typo.
DEFAULT_PRIOR_CLASSES = {"pascal", "maxwell", "kepler", "rdna1", "cdna4", "gaudi2", "gaudi3"}


def test_every_card_has_an_efficiency_class() -> None:
    named = set(priors().architecture) - {"default"}
    classes = {efficiency_class(s.architecture, s.form_factor) for s in CATALOG.all()}
    assert classes - named == DEFAULT_PRIOR_CLASSES
    assert efficiency_class("pascal", "consumer") == "consumer"  # GTX 1080 Ti: GeForce class


@pytest.mark.parametrize("assumptions", ["seed", "hf-peft", "optimized"])
def test_every_card_gets_a_finite_estimate(assumptions: str) -> None:
    prepared = prepare(make_job("llama-3.1-8b", "qlora", tokens="1M"), assumptions)
    for spec in CATALOG.all():
        est = prepared.on(spec)
        assert 0 < est.tokens_per_second < math.inf and 0 < est.efficiency < 1, spec.id
        row = est.as_dict()
        assert row["efficiency_class"] == efficiency_class(spec.architecture, spec.form_factor)
        assert row["efficiency_source"]


def test_old_cards_are_estimated_slow() -> None:
    prepared = prepare(make_job("llama-3.1-8b", "qlora", tokens="1M"), get_assumptions())
    tps = {i: prepared.on(CATALOG.get(i)).tokens_per_second for i in ("K80-12GB", "P100-PCIE-16GB", "T4-16GB")}
    assert tps["K80-12GB"] < tps["P100-PCIE-16GB"] < tps["T4-16GB"]
