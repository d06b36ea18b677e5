"""One invariant suite over every provider's bundled cassette (or rate sheet) and every real payload:
what any correct parse of a price list must satisfy, whoever the provider.

- every price is positive and within a plausible band for its card (per GPU-hour, scaled by the card's
  dense compute: a $40/h RTX 3060 or a $0.05/h H100 is a parser bug, not a deal);
- GPU counts are plausible (a slice of one card, or up to a 72-GPU rack);
- the memory an offer states is the card's (a whole GPU) or at most the card's (a slice);
- an interruptible price is never above the on-demand price of the same machine;
- keys are unique within a provider; regions are well formed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from decimal import Decimal

import pytest

from providers.cassette import Cassette, bundled_cassette
from providers.contract import Pricing, ProviderKind, ScrapedOffer, ScrapeResult
from providers.fx.ecb import parse_eurofxref
from providers.registry import PROVIDERS
from tests.factories.cassettes import replay, resolve_all
from tests.factories.real_results import REAL_RESULTS
from tracker.catalog.gpus import GpuSpec, get_catalog

REGION = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_GPUS = Decimal(72)
# $/GPU-hour per dense BF16 TFLOP: the 2026 market spans roughly 0.001-0.004 (H100 $1-4, RTX 4090
# $0.2-0.7); the band is an order of magnitude wider on each side, with a floor for old cards.
LOW_PER_TFLOP, HIGH_PER_TFLOP, HIGH_FLOOR = 0.0001, 0.05, 4.0
_PRICING_WORDS = re.compile(r":(spot|bid|on_demand|interruptible|preemptible)\b")


def _sources() -> list[pytest.ParameterSet]:
    cases = [pytest.param(p.name, "cassette", id=f"{p.name}-cassette") for p in PROVIDERS]
    cases += [pytest.param(name, "real", id=f"{name}-real") for name in sorted(REAL_RESULTS)]
    return cases


def _result(provider: str, source: str) -> ScrapeResult:
    if source == "real":
        return REAL_RESULTS[provider]()
    cls = next(p for p in PROVIDERS if p.name == provider)
    return replay(cls)


def _usd_per_unit() -> dict[str, Decimal]:
    """The bundled ECB day's rates: the band is in USD, and a CNY or JPY quote is checked after conversion."""
    text = Cassette.load(bundled_cassette("fx_ecb")).interactions[0].text or ""
    return {"USD": Decimal(1)} | parse_eurofxref(text.encode())[-1].usd_per_unit


def _band(card: GpuSpec) -> tuple[float, float]:
    return LOW_PER_TFLOP * card.bf16_tflops, max(HIGH_FLOOR, HIGH_PER_TFLOP * card.bf16_tflops)


def _stem(offer: ScrapedOffer) -> str:
    """The machine an offer is a price for: its key without the pricing word adapters append."""
    return _PRICING_WORDS.sub("", offer.key)


@pytest.mark.parametrize(("provider", "source"), _sources())
def test_offers_satisfy_the_invariants(provider: str, source: str) -> None:
    result = _result(provider, source)
    cls = next(p for p in PROVIDERS if p.name == provider)
    if cls.kind != ProviderKind.static_sheet and source == "cassette":
        assert result.offers, f"{provider}: its cassette yields no offers"
    keys = [o.key for o in result.offers]
    assert len(keys) == len(set(keys)), f"{provider}: duplicate keys {sorted(k for k in keys if keys.count(k) > 1)[:5]}"
    resolved, _unknown = resolve_all(result, provider)
    catalog = get_catalog()
    rates = _usd_per_unit()
    problems: list[str] = []
    for o in result.offers:
        if not (o.price_per_hour > 0):
            problems.append(f"{o.key}: price {o.price_per_hour}")
        if not (0 < o.gpu_count <= MAX_GPUS):
            problems.append(f"{o.key}: {o.gpu_count} GPUs")
        if o.region and not REGION.match(o.region):
            problems.append(f"{o.key}: region {o.region!r}")
        gpu_id = resolved.get(o.key)
        if gpu_id is None or not (o.gpu_count > 0):
            continue  # unknown names are reported by ingest, never priced
        card = catalog.get(gpu_id)
        low, high = _band(card)
        rate = rates.get(o.currency)
        if rate is None:
            problems.append(f"{o.key}: currency {o.currency!r} has no ECB rate")
            continue
        per_gpu = float(o.price_per_hour / o.gpu_count * rate)
        if not low <= per_gpu <= high:
            problems.append(f"{o.key}: ${per_gpu:.4f}/GPU-h outside {low:.3f}-{high:.2f} for {gpu_id}")
        if o.gpu_memory_gb is not None:
            memory = float(o.gpu_memory_gb)
            whole = o.gpu_count >= 1
            if whole and abs(memory - card.memory_gb) > 0.1 * card.memory_gb:
                problems.append(f"{o.key}: {memory:g} GB per GPU, {gpu_id} has {card.memory_gb:g}")
            if not whole and memory > card.memory_gb * 1.05:
                problems.append(f"{o.key}: a slice with {memory:g} GB of a {card.memory_gb:g} GB card")
    assert not problems, f"{provider} ({source}): " + "; ".join(problems[:10])


@pytest.mark.parametrize(("provider", "source"), _sources())
def test_interruptible_is_never_dearer_than_on_demand_for_the_same_machine(provider: str, source: str) -> None:
    result = _result(provider, source)
    on_demand: dict[str, list[Decimal]] = defaultdict(list)
    for o in result.offers:
        if o.pricing == Pricing.on_demand:
            on_demand[_stem(o)].append(o.price_per_hour)
    dearer = [
        f"{o.key}: {o.price_per_hour} > {min(on_demand[_stem(o)])}"
        for o in result.offers
        if o.pricing == Pricing.spot and on_demand.get(_stem(o)) and o.price_per_hour > min(on_demand[_stem(o)])
    ]
    assert not dearer, f"{provider} ({source}): " + "; ".join(dearer[:10])


def test_every_real_payload_folder_has_an_integrity_case() -> None:
    from tests.factories.real_payloads import ROOT, real_payload_path

    real_payload_path("README.md")  # skips outside CI when the folder is absent, fails under CI
    folders = {p.name for p in ROOT.iterdir() if p.is_dir()}
    missing = sorted(folders - set(REAL_RESULTS))
    assert not missing, f"real payloads without an integrity case: {missing}"
