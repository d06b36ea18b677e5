"""Which card an offer's GPU is when its name leaves the variant open: one documented policy per provider.

`GpuCatalog.normalize()` answers one card or raises `AmbiguousGpuName`: right for a name, but an offer
needs a card to be priced and estimated. `resolve_offer_gpu()` is what ingest calls: the catalog's answer
when the name settles it, otherwise the provider's policy (`variants.toml`), and then the offer carries
the assumption (`Resolved.assumed`, stored as `attributes["variant_assumed"]`).

The rules, in order:
1. The name (with the provider's `[provider_conventions]`) names one card: that card. For a provider with
   a policy (`marks_conventions`), a convention that settled a bare name is still an inference: noted.
2. Only the form factor is open (one family, one memory: "H100" at 80 GB is SXM or PCIe): the provider's
   `form_factor` when it is among the candidates, else the slowest candidate (lowest BF16 peak), so an
   unknown board never flatters a $/token figure.
3. The memory is open within one family, and the catalog names the family's common variant
   (`[common_variant]`: "RTX 3080" is the 10 GB card; the 12 GB refresh is rare): that variant.
4. Anything more open ("A100" with no memory: 40 or 80 GB, both common) stays unresolved.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from tracker.catalog.gpus import FORM_FACTORS, AmbiguousGpuName, GpuCatalog, GpuCatalogError, GpuNameError, GpuSpec

__all__ = ["Resolved", "VariantPolicy", "VariantRules", "get_rules", "resolve_offer_gpu"]

SLOWEST = "slowest"


@dataclass(frozen=True, slots=True)
class Resolved:
    card: GpuSpec
    assumed: str | None = None  # why this variant, when the name did not say it


@dataclass(frozen=True, slots=True)
class VariantPolicy:
    form_factor: str  # a catalog form factor, or "slowest"
    basis: str  # what the provider's documentation says, shown on the offer
    marks_conventions: bool = True


@dataclass(frozen=True, slots=True)
class VariantRules:
    default: VariantPolicy
    policies: dict[str, VariantPolicy]
    common: dict[str, str]  # family → card id

    def policy(self, provider: str | None) -> VariantPolicy:
        return self.policies.get((provider or "").lower(), self.default)

    @classmethod
    def from_mapping(cls, data: dict[str, Any], catalog: GpuCatalog) -> VariantRules:
        extra = set(data) - {"default", "policy", "common_variant"}
        if extra:
            raise GpuCatalogError(f"variants: unknown table(s) {sorted(extra)}")
        default = _policy("default", data.get("default"))
        policies = {name.lower(): _policy(f"policy.{name}", v) for name, v in dict(data.get("policy", {})).items()}
        common: dict[str, str] = {}
        for family, card_id in dict(data.get("common_variant", {})).items():
            try:
                card = catalog.get(str(card_id))
            except KeyError:
                raise GpuCatalogError(f"common_variant.{family}: {card_id!r} is not a card id") from None
            if card.family != family:
                raise GpuCatalogError(f"common_variant.{family}: {card_id!r} is of family {card.family!r}")
            common[family] = card.id
        return cls(default, policies, common)


def _policy(where: str, table: Any) -> VariantPolicy:
    if not isinstance(table, dict):
        raise GpuCatalogError(f"variants {where}: expected a table")
    unknown = set(table) - {"form_factor", "basis", "marks_conventions"}
    if unknown:
        raise GpuCatalogError(f"variants {where}: unknown field(s) {sorted(unknown)}")
    form, basis = table.get("form_factor"), table.get("basis")
    if form != SLOWEST and form not in FORM_FACTORS:
        raise GpuCatalogError(f"variants {where}.form_factor: {form!r} is neither 'slowest' nor a form factor")
    if not isinstance(basis, str) or not basis.strip():
        raise GpuCatalogError(f"variants {where}.basis: say what the policy rests on")
    marks = table.get("marks_conventions", True)
    if not isinstance(marks, bool):
        raise GpuCatalogError(f"variants {where}.marks_conventions: expected true or false")
    return VariantPolicy(str(form), basis, marks)


@cache
def get_rules() -> VariantRules:
    """The shipped policies (`variants.toml`), validated against the shipped catalog once per process."""
    from tracker.catalog.gpus import get_catalog

    text = (resources.files("tracker.catalog") / "variants.toml").read_text(encoding="utf-8")
    return VariantRules.from_mapping(tomllib.loads(text), get_catalog())


def resolve_offer_gpu(
    catalog: GpuCatalog,
    raw_name: str,
    memory_gb: float | None = None,
    *,
    provider: str | None = None,
    rules: VariantRules | None = None,
) -> Resolved:
    """The card an offer's GPU is, with the assumption made when the name left the variant open.

    Raises `GpuNameError` (unknown, or more open than any rule settles) like `normalize()`."""
    rules = rules or get_rules()
    policy = rules.policy(provider)
    try:
        card = catalog.normalize(raw_name, memory_gb, provider=provider)
    except AmbiguousGpuName as exc:
        return _assume(catalog, exc, policy, rules)
    if provider and policy is not rules.default and policy.marks_conventions:
        try:
            catalog.normalize(raw_name, memory_gb)
        except AmbiguousGpuName as exc:
            return Resolved(card, f"form factor not stated ({', '.join(exc.candidates)}); {policy.basis}")
        except GpuNameError:
            pass  # a name only this provider uses: its convention is the name's meaning, not an inference
    return Resolved(card)


def _assume(catalog: GpuCatalog, exc: AmbiguousGpuName, policy: VariantPolicy, rules: VariantRules) -> Resolved:
    candidates = [catalog.get(c) for c in exc.candidates]
    listed = ", ".join(exc.candidates)
    families = {g.family for g in candidates}
    if len({(g.family, g.memory_gb) for g in candidates}) == 1:
        chosen = [g for g in candidates if g.form_factor == policy.form_factor]
        card = chosen[0] if len(chosen) == 1 else _slowest(candidates)
        basis = policy.basis
        if not chosen and policy.form_factor != SLOWEST:
            basis += f" (no {policy.form_factor} part among them: slowest assumed)"
        return Resolved(card, f"form factor not stated ({listed}); {basis}")
    if len(families) == 1 and (common := rules.common.get(families.pop())) in exc.candidates:
        card = catalog.get(common)
        return Resolved(card, f"memory not stated ({listed}); {card.id} is the family's common variant")
    raise exc


def _slowest(candidates: list[GpuSpec]) -> GpuSpec:
    return min(candidates, key=lambda g: (g.bf16_tflops, g.id))
