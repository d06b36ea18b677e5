"""Variant policies (tracker/catalog/variants.toml): what an offer's open-ended GPU name resolves to, per
provider, and that the offer says so. Each case starts from an object a real provider response showed."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters import cudo, daytona, thundercompute
from providers.contract import ScrapedOffer, ScrapeResult
from tracker.catalog.gpus import AmbiguousGpuName, GpuCatalogError, get_catalog
from tracker.catalog.variants import VariantRules, get_rules, resolve_offer_gpu
from tracker.config import Settings
from tracker.ingest.validate import validate_batch

CATALOG = get_catalog()


def _validated(result: ScrapeResult, provider: str) -> dict[str, tuple[str, str | None]]:
    prepared = validate_batch(result, CATALOG, Settings(), provider)
    assert not prepared.unknown, prepared.unknown
    return {v.scraped.key: (v.gpu.id, v.scraped.attributes.get("variant_assumed")) for v in prepared.valid}


def test_cudo_rtx3080_without_memory_resolves_to_the_common_variant():
    # A real CUDO machine type: the GPU model has no memory in it, and the listing gives none.
    real = {
        "dataCenterId": "se-smedjebacken-1",
        "machineType": "epyc-rome-rtx-3080",
        "gpuModel": "RTX 3080",
        "gpuModelId": "nvidia-rtx-3080",
        "gpuPriceHr": {"value": "0.05"},
        "vcpuPriceHr": {"value": "0.002"},
        "memoryGibPriceHr": {"value": "0.001"},
        "maxGpuFree": 1,
    }
    result = cudo.parse({"machineTypes": [real]})
    assert result.offers[0].gpu_memory_gb is None
    card, assumed = _validated(result, "cudo")["se-smedjebacken-1:epyc-rome-rtx-3080:1"]
    assert card == "RTX3080-10GB"
    assert assumed is not None and "memory not stated" in assumed and "common variant" in assumed


def test_a_family_with_two_common_memories_stays_unresolved():
    with pytest.raises(AmbiguousGpuName):
        resolve_offer_gpu(CATALOG, "A100", None, provider="cudo")
    # The stated memory wins over the common variant.
    assert resolve_offer_gpu(CATALOG, "RTX 3080 12GB", None, provider="cudo").card.id == "RTX3080-12GB"


def _daytona(rows: list[dict[str, object]]) -> ScrapeResult:
    return daytona.parse({"gpus": rows, "resources": {"onDemand": {"vcpuPerHour": 0, "memoryGiBPerHour": 0}}})


def test_daytona_bare_names_follow_its_one_policy_and_say_so():
    result = _daytona([{"type": "H200", "onDemandPricePerHour": 4.54}, {"type": "H100", "onDemandPricePerHour": 3.95}])
    got = _validated(result, "daytona")
    basis = get_rules().policy("daytona").basis
    assert got["H200:1"] == ("H200-NVL-141GB", f"form factor not stated (H200-SXM-141GB, H200-NVL-141GB); {basis}")
    assert got["H100:1"][0] == "H100-PCIE-80GB" and got["H100:1"][1] is not None and "Daytona" in got["H100:1"][1]


def test_thunder_a100_80gb_is_pcie_by_its_policy():
    display = "A100 (80GB)"  # how a real Thunder specs entry names it
    offer = ScrapedOffer(
        key="a100xl_x1_production",
        gpu_name=display,
        gpu_count=Decimal(1),
        price_per_hour=Decimal("0.78"),
        gpu_memory_gb=Decimal(80),
    )
    card, assumed = _validated(ScrapeResult(offers=[offer]), "thundercompute")["a100xl_x1_production"]
    assert card == "A100-PCIE-80GB" and assumed is not None and "Thunder" in assumed
    assert thundercompute.GPUS["a100xl"] == ("A100", Decimal(80))  # the adapter leaves the board open


@pytest.mark.parametrize("provider", ["lium", "vastai"])
def test_lium_and_vast_bare_h200_is_sxm_by_convention_and_marked(provider):
    offer = ScrapedOffer(
        key="n1", gpu_name="H200", gpu_count=Decimal(8), price_per_hour=Decimal("20"), gpu_memory_gb=Decimal("140.4")
    )
    card, assumed = _validated(ScrapeResult(offers=[offer]), provider)["n1"]
    assert card == "H200-SXM-141GB"
    assert assumed is not None and '"H200 NVL"' in assumed  # the basis: the NVL is named apart


def test_a_stated_board_is_never_marked():
    for provider in ("vastai", "daytona", "thundercompute", "aws"):
        assert resolve_offer_gpu(CATALOG, "H100 SXM", 80, provider=provider).assumed is None
    # Providers without a policy: their conventions are documented hardware, not an assumption.
    assert resolve_offer_gpu(CATALOG, "H100", None, provider="aws").assumed is None


def test_the_default_policy_is_the_slowest_variant():
    found = resolve_offer_gpu(CATALOG, "Tesla V100 16GB", None, provider="some-new-cloud")
    assert found.card.id == "V100-PCIE-16GB" and found.assumed is not None
    assert "slowest variant assumed" in found.assumed


def test_policies_are_validated():
    base = {"default": {"form_factor": "slowest", "basis": "x"}}
    with pytest.raises(GpuCatalogError, match="form_factor"):
        VariantRules.from_mapping(base | {"policy": {"p": {"form_factor": "HBM", "basis": "x"}}}, CATALOG)
    with pytest.raises(GpuCatalogError, match="basis"):
        VariantRules.from_mapping(base | {"policy": {"p": {"form_factor": "SXM"}}}, CATALOG)
    with pytest.raises(GpuCatalogError, match="family"):
        VariantRules.from_mapping(base | {"common_variant": {"RTX3080": "RTX3060-12GB"}}, CATALOG)
    with pytest.raises(GpuCatalogError, match="not a card id"):
        VariantRules.from_mapping(base | {"common_variant": {"RTX3080": "RTX3080-11GB"}}, CATALOG)
