"""GPU catalog: canonical cards, their specs, and raw-name normalisation.

The catalog itself is data (`tracker/catalog/gpus.toml`); this module loads it and resolves names.
A card's identity keeps model, memory and form factor apart (H100 SXM, PCIe and NVL run at
different speeds), while a *family* ("H100") groups its variants.

Two ways in:
* `normalize()` is for provider data. It must land on exactly one card, or say why not: a name that
  could be several variants raises `AmbiguousGpuName` rather than guessing, because a guessed SXM/PCIe
  swap silently skews every $/token ranking built on it.
* `resolve()` is for people. A family or a partial name returns every card it covers.

A card is one GPU as CUDA and the clouds count it: boards that carry several GPUs (K80 and M60: two,
A16: four) are that many cards, and a GB200/GB300 "NVL72" rack is 72 of them.

MIG slices are not cards. A MIG GPU instance ("A100 MIG 1g.10gb", "NVIDIA A100-SXM4-80GB MIG 2g.20gb",
"mig-3g.40gb") is a share of its parent card: `normalize_slice()` returns it as (parent card, compute
fraction, slice memory), the fraction being NVIDIA's "fraction of SMs" for the profile (g/7 on A100/H100,
g/4 on A30; a 3g.40gb slice has 3/7 of the compute but 4/8 of the memory). The profiles each card supports
are data (`[[mig]]` in gpus.toml). An estimate prices a slice as that fraction of the card with the
slice's memory: `estimate(job, s.card, s.fraction, memory_gb=s.memory_gb)`, and an offer of n slices is
n x fraction GPUs. `normalize()` and `resolve()`, which only ever answer whole cards, refuse slice names
with `MigSliceName` (an `UnknownGpuName`, so callers that know only cards set the offer aside rather than
list a 1/7 slice's price as a whole A100's).
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from fractions import Fraction
from functools import cache
from importlib import resources
from typing import Any

VENDORS = frozenset({"nvidia", "amd", "intel"})
FORM_FACTORS = frozenset({"SXM", "PCIe", "NVL", "OAM", "consumer", "superchip"})
INTERCONNECTS = frozenset({"nvlink", "infinity-fabric", "roce", "pcie"})

# Providers report memory in GiB, usable-after-ECC GB, or rounded figures; 7 % absorbs that (80 GB
# read as 81559 MiB) while staying well clear of the next size in any family (80 vs 94 GB is 17 %).
MEMORY_TOLERANCE = 0.07
GIB_IN_GB = 2**30 / 1e9


@dataclass(frozen=True, slots=True)
class GpuSpec:
    id: str  # canonical id, e.g. "H100-SXM-80GB"
    family: str  # e.g. "H100"
    vendor: str  # "nvidia" | "amd" | "intel"
    name: str  # display name, e.g. "H100 SXM 80GB"
    memory_gb: float
    form_factor: str  # "SXM" | "PCIe" | "NVL" | "OAM" | "consumer" | "superchip" ...
    architecture: str  # "ampere" | "hopper" | "ada" | "blackwell" | "turing" | "volta" | "pascal" | "cdna3" ...
    bandwidth_tbs: float
    # Dense (no sparsity); FP32-accumulate for GeForce cards; FP16 where no BF16 (Volta, Turing, P100);
    # plain FP32 where FP16 is no faster either (Kepler, Maxwell, P4, GeForce Pascal).
    bf16_tflops: float
    fp8_tflops: float | None
    tdp_w: int | None
    interconnect: str  # "nvlink" | "pcie" | "infinity-fabric" | "roce" — multi-GPU scaling efficiency key
    aliases: tuple[str, ...] = ()  # other names that mean exactly this card
    reported_memory_gb: tuple[float, ...] = ()  # other per-GPU sizes providers report for this card
    notes: str | None = None  # provenance and uncertainty of the figures


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One MIG GPU-instance profile of a card, e.g. 3g.40gb on an A100 80GB: 3 of 7 compute slices, 40 GB."""

    name: str  # canonical "<g>g.<memory>gb", e.g. "3g.40gb"
    compute_slices: int  # g
    of: int  # compute slices in the whole card (7 on A100/H100/H200/B200, 4 on A30)
    memory_gb: float

    @property
    def fraction(self) -> Fraction:
        return Fraction(self.compute_slices, self.of)


@dataclass(frozen=True, slots=True)
class GpuSlice:
    """A MIG slice resolved to its parent card: estimate and price it as `fraction` of `card` with
    `memory_gb` of memory (`estimate(job, card, fraction, memory_gb=memory_gb)`)."""

    card: GpuSpec  # the parent card
    profile: str  # "1g.10gb"
    fraction: float  # share of the card's compute (NVIDIA's "fraction of SMs"), e.g. 1/7
    memory_gb: float  # the slice's memory
    assumed: str | None = None  # why this parent, when the name left the parent variant open

    @property
    def share(self) -> str:
        """The fraction as NVIDIA writes it, e.g. "3/7"."""
        return str(Fraction(self.fraction).limit_denominator(16))


class GpuNameError(ValueError):
    """A GPU name that does not identify a card (or, for normalize, exactly one card)."""

    def __init__(self, raw: str, message: str) -> None:
        super().__init__(message)
        self.raw = raw


class UnknownGpuName(GpuNameError):
    def __init__(self, raw: str, suggestions: Sequence[str], reason: str | None = None) -> None:
        message = f"unknown GPU name {raw!r}"
        if reason:
            message += f": {reason}"
        if suggestions:
            message += f"; did you mean {', '.join(suggestions)}?"
        super().__init__(raw, message)
        self.suggestions = list(suggestions)


class AmbiguousGpuName(GpuNameError):
    def __init__(self, raw: str, candidates: Sequence[str], missing: str = "memory or form factor") -> None:
        super().__init__(
            raw,
            f"GPU name {raw!r} is ambiguous: it matches {', '.join(candidates)}; the name must also give the {missing}",
        )
        self.candidates = list(candidates)


class MigSliceName(UnknownGpuName):
    """A MIG slice name where a whole card is expected (`normalize()`, `resolve()`).

    A slice is part of a card, not a card: `normalize_slice()` resolves it. This is an UnknownGpuName so
    that callers which only handle whole cards set it aside instead of counting a slice as a card."""

    def __init__(self, raw: str, slices: Sequence[GpuSlice]) -> None:
        first = slices[0]
        parents = " or ".join(s.card.id for s in slices)
        super().__init__(
            raw,
            [s.card.id for s in slices],
            f"a MIG {first.profile} slice, not a whole card: {first.share} of the compute of {parents} with "
            f"{first.memory_gb:g} GB (normalize_slice() resolves it; estimate it as gpus={first.fraction:.6g}, "
            f"memory_gb={first.memory_gb:g} on that card)",
        )
        self.slices = list(slices)


class GpuCatalogError(ValueError):
    """The catalog data itself is inconsistent; raised at load time, naming the offending entry."""


# --- name handling -----------------------------------------------------------------------------------

# "8x H100", "H100 x8", "H100 GPU - 8X". Counts are short, so "MI 300X" keeps its model number.
_COUNT_PREFIX = re.compile(r"^\s*\d{1,3}\s*[x×]\s*", re.IGNORECASE)
_COUNT_SUFFIX = re.compile(r"(?:\s*-\s*|\s+)(?:\d{1,2}\s*[x×]|[x×]\s*\d{1,3})\s*$", re.IGNORECASE)
_TOKEN = re.compile(r"[a-z]+[a-z0-9]*|\d+(?:\.\d+)?[a-z0-9]*")
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)(?:gb|gib|g)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_GLUED_HINT = re.compile(r"([a-z]+\d+[a-z]*?)(sxm\d?|pcie|nvl)")
# Words that never tell two cards apart. NVLink is here, not among the hints: NVLink bridges exist on
# PCIe boards too (Fluidstack lists "H100_NVLINK_80GB" next to "H100_SXM5_80GB").
_NOISE = frozenset(
    {
        "nvidia",
        "amd",
        "intel",
        "habana",
        "tesla",
        "geforce",
        "instinct",
        "radeon",
        "generation",
        "gpu",
        "nvlink",
        "hbm2",
        "hbm2e",
        "hbm3e",
        "gddr6",
        "gddr6x",
        "gddr7",
    }
)
_GLUED_VENDOR = re.compile(r"^(?:nvidia|geforce|tesla|amd|instinct|radeon)(?=[a-z0-9])")

_Hint = tuple[str, Callable[[GpuSpec], bool]]
_SXM: _Hint = ("SXM", lambda s: s.form_factor == "SXM")
_PCIE: _Hint = ("PCIe", lambda s: s.interconnect == "pcie")
# GB200/GB300 racks are sold as "NVL72"; no family has both an NVL card and a superchip.
_NVL: _Hint = ("NVL", lambda s: s.form_factor in {"NVL", "superchip"})
# HBM3 rules out the HBM2e PCIe H100; with 80 GB that leaves the SXM part ("NVIDIA H100 80GB HBM3").
_HBM3: _Hint = ("HBM3", lambda s: s.interconnect != "pcie")
_OAM: _Hint = ("OAM", lambda s: s.form_factor == "OAM")
_HINTS: dict[str, _Hint] = {
    "sxm": _SXM,
    "sxm2": _SXM,
    "sxm3": _SXM,
    "sxm4": _SXM,
    "sxm5": _SXM,
    "sxm6": _SXM,
    "hgx": _SXM,
    "dgx": _SXM,
    "pcie": _PCIE,
    "pcle": _PCIE,  # "PCle" (lower-case L) is a common misspelling
    "nvl": _NVL,
    "hbm3": _HBM3,
    "oam": _OAM,
}

# MIG profile names: "1g.10gb", "MIG 1g.10gb", "mig-1g.10gb", "1g.10gb+me" (media extensions: same share).
# A compute-instance prefix ("1c.2g.20gb") is not matched: it shares a GPU instance and is left unknown.
_MIG_PROFILE = re.compile(
    r"(?<![a-z0-9.])(?:mig[\s_.-]*)?([1-9])g\.(\d{1,3})gb(?:\s*\+\s*me)?(?![a-z0-9])", re.IGNORECASE
)
_MIG_WORD = re.compile(r"(?<![a-z0-9])mig(?![a-z0-9])", re.IGNORECASE)
_MIG_PROFILE_NAME = re.compile(r"([1-9])g\.(\d{1,3})gb")

# Azure sizes carry a vCPU count ("Standard_NC24ads_A100_v4"); the GPU depends only on the series.
_AZURE_SIZE = re.compile(r"^(?:standard_)?([a-z]{2,}?)\d+(?=[a-z]*[ _])", re.IGNORECASE)
_OCI_SHAPE = re.compile(r"^(?:bm|vm)\.(gpu\d*)(?:\.([a-z0-9-]+))?\.\d+$", re.IGNORECASE)


# The SXM module generation of each family, for telling a person their query names a card that does not exist
# (NVIDIA's data sheets: V100 SXM2 and SXM3 (DGX-2), A100 SXM4, H100/H200/H800/H20 SXM5, B200/B300 SXM6).
_SXM_GENERATIONS: dict[str, set[int]] = {
    "V100": {2, 3},
    "A100": {4},
    "A800": {4},
    "H100": {5},
    "H200": {5},
    "H800": {5},
    "H20": {5},
    "B200": {6},
    "B300": {6},
}
_SXM_GENERATION_WORD = re.compile(r"sxm\s?(\d)(?![\dg])")  # "SXM5", "sxm 4"; not the "SXM-80GB" of an id


def _compact(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _strip_count(raw: str) -> str:
    return _COUNT_SUFFIX.sub("", _COUNT_PREFIX.sub("", raw)).strip()


def _lookup_keys(text: str) -> list[str]:
    """The name as written, then without vendor/marketing words ("NVIDIA H100 NVL" -> "h100nvl")."""
    tokens = _TOKEN.findall(text.lower())
    cleaned = "".join(_GLUED_VENDOR.sub("", t) for t in tokens if t not in _NOISE)
    return list(dict.fromkeys(k for k in (_compact(text), cleaned) if k))


def _provider_forms(provider: str | None, text: str) -> list[str]:
    forms = [text]
    if provider == "azure":
        forms.append(_AZURE_SIZE.sub(r"\1", text, count=1))
    elif provider == "oci" and (shape := _OCI_SHAPE.match(text)):
        forms.append(shape[2] or shape[1])
    return forms


@dataclass(frozen=True, slots=True)
class _Parsed:
    model: str  # compact model key, e.g. "a100", "rtx6000ada"
    memory_gb: float | None
    hints: tuple[str, ...]


def _parse(text: str) -> _Parsed:
    tokens = _TOKEN.findall(text.lower())
    model: list[str] = []
    hints: list[str] = []
    memory: float | None = None
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if m := _MEMORY.fullmatch(token):
            memory = float(m[1])
        elif _NUMBER.fullmatch(token) and i + 1 < len(tokens) and tokens[i + 1] in {"gb", "gib", "g"}:
            memory = float(token)
            i += 1
        elif token in _HINTS:
            hints.append(token)
        elif token in _NOISE:
            pass
        elif m := _GLUED_HINT.fullmatch(token):  # "h100nvl", "a100sxm4"
            model.append(_GLUED_VENDOR.sub("", m[1]))
            hints.append(m[2])
        else:
            model.append(_GLUED_VENDOR.sub("", token))
        i += 1
    return _Parsed("".join(model), memory, tuple(hints))


def _memory_distance(spec: GpuSpec, memory_gb: float) -> float:
    return min(abs(memory_gb - size) / size for size in (spec.memory_gb, *spec.reported_memory_gb))


def _fit_memory(specs: Sequence[GpuSpec], memory_gb: float) -> list[GpuSpec]:
    # Vendor "GB" on memory is really GiB, so bytes/1e9 overstates it by 7.4 % (an 80 GB card shows as
    # 85.9): that reading is tried only when the figure fits no card as given.
    for memory in (memory_gb, memory_gb / GIB_IN_GB):
        near = [(d, s) for s in specs if (d := _memory_distance(s, memory)) <= MEMORY_TOLERANCE]
        if near:
            best = min(d for d, _ in near)
            return [s for d, s in near if d <= best + 1e-9]
    return []


def _what_differs(specs: Sequence[GpuSpec]) -> str:
    parts = []
    if len({s.memory_gb for s in specs}) > 1:
        parts.append("memory size")
    if len({s.form_factor for s in specs}) > 1:
        parts.append("form factor (SXM/PCIe/NVL)")
    return " and ".join(parts) or "variant"


# --- the catalog -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    ids: tuple[str, ...]
    label: str  # how suggestions show it: a card id or a family
    origin: str  # where in the data it came from, for conflict messages


class GpuCatalog:
    """Canonical cards plus every name that points at them. Build with `get_catalog()`."""

    def __init__(
        self,
        specs: Sequence[GpuSpec],
        family_aliases: Mapping[str, Sequence[str]] | None = None,
        raw_names: Mapping[str, Mapping[str, str]] | None = None,
        provider_conventions: Mapping[str, Mapping[str, str | Sequence[str]]] | None = None,
        mig_profiles: Mapping[str, Sequence[MigProfile]] | None = None,
    ) -> None:
        if not specs:
            raise GpuCatalogError("the catalog has no cards")
        self._specs = list(specs)
        self._by_id: dict[str, GpuSpec] = {}
        self._families: dict[str, list[GpuSpec]] = {}
        for spec in self._specs:
            if spec.id.upper() in self._by_id:
                raise GpuCatalogError(f"gpu {spec.id!r}: duplicate id")
            self._by_id[spec.id.upper()] = spec
            members = self._families.setdefault(spec.family, [])
            if members and (members[0].vendor, members[0].architecture) != (spec.vendor, spec.architecture):
                raise GpuCatalogError(
                    f"gpu {spec.id!r}: vendor/architecture differ from {members[0].id!r}, "
                    f"the first card of family {spec.family!r}"
                )
            members.append(spec)

        self._names: dict[str, _Entry] = {}
        for spec in self._specs:
            self._add(self._names, spec.id, [spec.id], spec.id, f"gpu {spec.id!r}")
            for alias in spec.aliases:
                self._add(self._names, alias, [spec.id], spec.id, f"gpu {spec.id!r} alias {alias!r}")
        for family, members in self._families.items():
            ids = [s.id for s in members]
            self._add(self._names, family, ids, family, f"family {family!r}")
        for family, aliases in (family_aliases or {}).items():
            if family not in self._families:
                raise GpuCatalogError(f"family_aliases.{family}: no such family")
            ids = [s.id for s in self._families[family]]
            for alias in aliases:
                self._add(self._names, alias, ids, family, f"family_aliases.{family} {alias!r}")
        for provider, names in (raw_names or {}).items():
            for raw, target in names.items():
                where = f"raw_names.{provider} {raw!r}"
                if not isinstance(target, str):
                    raise GpuCatalogError(f"{where}: a raw name valid everywhere must name one card")
                self._add(self._names, _strip_count(raw), self._known_ids(where, [target]), target, where)

        self._conventions: dict[str, dict[str, _Entry]] = {}
        for provider, conventions in (provider_conventions or {}).items():
            table = self._conventions.setdefault(provider.lower(), {})
            for raw, cards in conventions.items():
                where = f"provider_conventions.{provider} {raw!r}"
                targets = [cards] if isinstance(cards, str) else list(cards)
                ids = self._known_ids(where, targets)
                self._add(table, raw, ids, ids[0] if len(ids) == 1 else ", ".join(ids), where)

        self._mig: dict[str, dict[str, MigProfile]] = {}
        for gpu_id, profiles in (mig_profiles or {}).items():
            where = f"mig {gpu_id!r}"
            card = self._by_id[self._known_ids(where, [gpu_id])[0].upper()]
            by_name = self._mig[gpu_id] = {}
            for profile in profiles:
                if profile.name in by_name:
                    raise GpuCatalogError(f"{where}: profile {profile.name!r} listed twice")
                if profile.memory_gb > card.memory_gb * (1 + MEMORY_TOLERANCE):
                    raise GpuCatalogError(
                        f"{where}: profile {profile.name!r} has more memory than the card's {card.memory_gb:g} GB"
                    )
                by_name[profile.name] = profile

    @classmethod
    def from_toml(cls, text: str, source: str = "gpus.toml") -> GpuCatalog:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise GpuCatalogError(f"{source}: {exc}") from exc
        try:
            return cls.from_mapping(data)
        except GpuCatalogError as exc:
            raise GpuCatalogError(f"{source}: {exc}") from None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> GpuCatalog:
        extra = set(data) - {"gpu", "family_aliases", "raw_names", "provider_conventions", "mig"}
        if extra:
            raise GpuCatalogError(f"unknown top-level table(s): {sorted(extra)}")
        entries = data.get("gpu")
        if not isinstance(entries, list):
            raise GpuCatalogError("expected [[gpu]] entries")
        specs = [_spec_from_table(f"gpu[{i}]", entry) for i, entry in enumerate(entries)]
        mig = data.get("mig", [])
        if not isinstance(mig, list):
            raise GpuCatalogError("mig: expected [[mig]] entries")
        mig_profiles: dict[str, list[MigProfile]] = {}
        for i, entry in enumerate(mig):
            for gpu_id, profiles in _mig_from_table(f"mig[{i}]", entry):
                if gpu_id in mig_profiles:
                    raise GpuCatalogError(f"mig[{i}]: {gpu_id!r} already has its MIG profiles")
                mig_profiles[gpu_id] = profiles
        return cls(
            specs,
            _table_of(data, "family_aliases", _string_list),
            _table_of(data, "raw_names", lambda where, v: _table_of_values(where, v, _one_card)),
            _table_of(data, "provider_conventions", lambda where, v: _table_of_values(where, v, _card_or_cards)),
            mig_profiles,
        )

    # -- lookups --

    def all(self) -> list[GpuSpec]:
        return list(self._specs)

    def get(self, gpu_id: str) -> GpuSpec:
        try:
            return self._by_id[gpu_id.upper()]
        except KeyError:
            raise KeyError(f"no GPU with id {gpu_id!r}") from None

    def families(self) -> list[str]:
        return list(self._families)

    def family_of(self, gpu_id: str) -> str:
        return self.get(gpu_id).family

    def normalize(self, raw_name: str, memory_gb: float | None = None, *, provider: str | None = None) -> GpuSpec:
        """The one card a provider's raw GPU name denotes.

        `memory_gb` is the provider-reported per-GPU memory (GiB or rounded GB are fine: it snaps to a
        known size within 7 %). `provider` (the provider's registry name, e.g. "aws") enables names that
        only that provider's conventions make unambiguous, e.g. AWS "H100" is always the SXM part.
        """
        if memory_gb is not None and not 0 < memory_gb < 2048:
            raise GpuNameError(raw_name, f"memory_gb={memory_gb} is not a per-GPU size in GB (MiB passed?)")
        matches = self._match(raw_name, memory_gb, provider.lower() if provider else None)
        if len(matches) > 1:
            raise AmbiguousGpuName(raw_name, [s.id for s in matches], _what_differs(matches))
        return matches[0]

    def resolve(self, query: str) -> list[GpuSpec]:
        """Every card a person's query covers: "H100" -> all H100s, "h100 sxm" -> the SXM one. A person who
        names an SXM generation means it: "H100 SXM6" is refused (H100s are SXM5), not read as "H100 SXM"."""
        matches = self._match(query, None, None)
        stated = {int(g) for g in _SXM_GENERATION_WORD.findall(query.lower())}
        for spec in matches:
            known = _SXM_GENERATIONS.get(spec.family)
            if stated and known and not stated & known:
                generations = " or ".join(f"SXM{g}" for g in sorted(known))
                raise UnknownGpuName(query, [spec.id], f"{spec.family} cards are {generations}")
        return matches

    # -- MIG slices --

    @staticmethod
    def is_slice_name(raw_name: str) -> bool:
        """Whether the name carries a MIG profile ("... MIG 1g.10gb")."""
        return _MIG_PROFILE.search(raw_name) is not None

    def slices_of(self, gpu_id: str) -> list[GpuSlice]:
        """Every MIG slice the card can be cut into (none for cards without MIG)."""
        card = self.get(gpu_id)
        return [self._slice(card, p) for p in self._mig.get(card.id, {}).values()]

    def normalize_slice(
        self, raw_name: str, memory_gb: float | None = None, *, provider: str | None = None
    ) -> GpuSlice:
        """The parent card, compute fraction and memory a MIG slice name denotes.

        The rest of the name (without the profile and the word "MIG") names the parent as `normalize()`
        reads names; the profile must be one that card supports, which often settles the memory size
        (3g.40gb exists on 80 GB A100s only). `memory_gb` is the provider-reported memory of the slice (or
        of the whole card). A name that fixes the family and the slice but not which variant it is cut from
        ("A100 MIG 1g.10gb": 1/7 and 10 GB of a PCIe or SXM, 40 or 80 GB A100) is placed on the slowest
        variant, as ingest does for whole cards whose form factor is open, and `assumed` says so. A name
        with no MIG profile raises UnknownGpuName.
        """
        if memory_gb is not None and not 0 < memory_gb < 2048:
            raise GpuNameError(raw_name, f"memory_gb={memory_gb} is not a per-GPU size in GB (MiB passed?)")
        slices = self._slices(raw_name, memory_gb, provider.lower() if provider else None)
        if len(slices) == 1:
            return slices[0]
        # Only the parent is open, not the slice: price it on the slowest parent.
        if len({(s.card.family, s.fraction, s.memory_gb) for s in slices}) > 1:
            raise AmbiguousGpuName(raw_name, [s.card.id for s in slices], _what_differs([s.card for s in slices]))
        slowest = min(slices, key=lambda s: (s.card.bf16_tflops, s.card.bandwidth_tbs, s.card.id))
        assumed = f"parent card not stated ({', '.join(s.card.id for s in slices)}); slowest variant assumed"
        return GpuSlice(slowest.card, slowest.profile, slowest.fraction, slowest.memory_gb, assumed)

    def _slice(self, card: GpuSpec, profile: MigProfile) -> GpuSlice:
        return GpuSlice(card, profile.name, float(profile.fraction), profile.memory_gb)

    def _slices(self, raw: str, memory_gb: float | None, provider: str | None) -> list[GpuSlice]:
        found = _MIG_PROFILE.search(raw)
        if found is None:
            raise UnknownGpuName(raw, [], "not a MIG slice name (no <g>g.<memory>gb profile in it)")
        profile = f"{found[1]}g.{int(found[2])}gb"
        parent = _MIG_WORD.sub(" ", raw[: found.start()] + " " + raw[found.end() :]).strip()
        try:
            cards = self._match(parent, None, provider)
        except UnknownGpuName as exc:
            reason = f"no card named in it besides the MIG profile {profile}"
            raise UnknownGpuName(raw, exc.suggestions, reason) from None
        with_profile = [c for c in cards if profile in self._mig.get(c.id, {})]
        if not with_profile:
            known = [c.id for c in cards if self._mig.get(c.id)]
            raise UnknownGpuName(raw, known, f"MIG profile {profile} is not one of {', '.join(c.id for c in cards)}'s")
        slices = [self._slice(c, self._mig[c.id][profile]) for c in with_profile]
        if memory_gb is not None:
            # The slice's own memory, or the parent card's (some listings give the card's).
            fits = [
                s
                for s in slices
                if any(
                    abs(m - size) / size <= MEMORY_TOLERANCE
                    for m in (memory_gb, memory_gb / GIB_IN_GB)
                    for size in (s.memory_gb, s.card.memory_gb)
                )
            ]
            if not fits:
                raise UnknownGpuName(
                    raw, [s.card.id for s in slices], f"~{memory_gb:g} GB fits neither the {profile} slice nor its card"
                )
            slices = fits
        return slices

    # -- internals --

    def _match(self, raw: str, memory_gb: float | None, provider: str | None) -> list[GpuSpec]:
        if _MIG_PROFILE.search(raw):
            raise MigSliceName(raw, self._slices(raw, None, provider))
        text = _strip_count(raw)
        keys = [k for form in _provider_forms(provider, text) for k in _lookup_keys(form)]
        if not keys:
            raise UnknownGpuName(raw, [], "no model name in it")
        entry = self._lookup(keys, provider)
        hints: tuple[str, ...] = ()
        name_memory: float | None = None
        if entry is None:
            parsed = _parse(text)
            # A provider's convention fills in an unstated form factor; it never overrides a stated one.
            scope = None if parsed.hints else provider
            entry = self._lookup([parsed.model], scope) if parsed.model else None
            if entry is None:
                raise UnknownGpuName(raw, self._suggest(parsed.model or keys[-1]))
            hints, name_memory = parsed.hints, parsed.memory_gb

        covered = [self._by_id[i.upper()] for i in entry.ids]
        matches = covered
        for hint in hints:
            matches = [s for s in matches if _HINTS[hint][1](s)]
        for memory in (name_memory, memory_gb):
            if memory is not None:
                matches = _fit_memory(matches, memory)
        if not matches:
            wanted = [_HINTS[h][0] for h in hints] + [f"~{m:g} GB" for m in (name_memory, memory_gb) if m]
            raise UnknownGpuName(raw, [s.id for s in covered], f"no {entry.label} card matches {', '.join(wanted)}")
        return matches

    def _lookup(self, keys: Sequence[str], provider: str | None) -> _Entry | None:
        tables = [self._conventions.get(provider, {})] if provider else []
        for table in [*tables, self._names]:
            for key in keys:
                if key in table:
                    return table[key]
        return None

    def _suggest(self, key: str) -> list[str]:
        close = difflib.get_close_matches(key, list(self._names), n=8, cutoff=0.6)
        return list(dict.fromkeys(self._names[k].label for k in close))[:5]

    def _known_ids(self, where: str, targets: Sequence[str]) -> list[str]:
        if not targets:
            raise GpuCatalogError(f"{where}: names no card")
        for target in targets:
            if target.upper() not in self._by_id or self._by_id[target.upper()].id != target:
                raise GpuCatalogError(f"{where}: {target!r} is not a card id")
        return list(targets)

    @staticmethod
    def _add(table: dict[str, _Entry], name: str, ids: Sequence[str], label: str, where: str) -> None:
        key = _compact(name)
        if not key:
            raise GpuCatalogError(f"{where}: the name is empty once punctuation is ignored")
        previous = table.get(key)
        if previous is None:
            table[key] = _Entry(tuple(ids), label, where)
        elif set(previous.ids) != set(ids):
            raise GpuCatalogError(
                f"{where}: {name!r} would mean {', '.join(ids)}, but {previous.origin} "
                f"already makes it mean {', '.join(previous.ids)}"
            )


# --- loading and validation --------------------------------------------------------------------------

_ID = re.compile(r"[A-Z0-9]+(?:-[A-Z0-9]+)*")
_REQUIRED = (
    "id",
    "family",
    "vendor",
    "name",
    "memory_gb",
    "form_factor",
    "architecture",
    "bandwidth_tbs",
    "bf16_tflops",
    "interconnect",
)


def _spec_from_table(where: str, table: Any) -> GpuSpec:
    if not isinstance(table, dict):
        raise GpuCatalogError(f"{where}: expected a table")
    where = f"{where} ({table.get('id', '?')})"
    unknown = set(table) - {f.name for f in fields(GpuSpec)}
    if unknown:
        raise GpuCatalogError(f"{where}: unknown field(s) {sorted(unknown)}")
    missing = [key for key in _REQUIRED if key not in table]
    if missing:
        raise GpuCatalogError(f"{where}: missing required field(s) {missing}")

    def text(key: str) -> str:
        return _string(f"{where}.{key}", table[key])

    def optional(key: str) -> float | None:
        return _positive(f"{where}.{key}", table[key]) if key in table else None

    def positive(key: str) -> float:
        return _positive(f"{where}.{key}", table[key])

    tdp = table.get("tdp_w")
    if tdp is not None and (isinstance(tdp, bool) or not isinstance(tdp, int) or tdp <= 0):
        raise GpuCatalogError(f"{where}.tdp_w: must be a positive whole number of watts, got {tdp!r}")
    reported = table.get("reported_memory_gb", [])
    if not isinstance(reported, list):
        raise GpuCatalogError(f"{where}.reported_memory_gb: expected a list, got {reported!r}")
    notes = table.get("notes")
    spec = GpuSpec(
        id=text("id"),
        family=text("family"),
        vendor=text("vendor"),
        name=text("name"),
        memory_gb=positive("memory_gb"),
        form_factor=text("form_factor"),
        architecture=text("architecture"),
        bandwidth_tbs=positive("bandwidth_tbs"),
        bf16_tflops=positive("bf16_tflops"),
        fp8_tflops=optional("fp8_tflops"),
        tdp_w=tdp,
        interconnect=text("interconnect"),
        aliases=tuple(_string_list(f"{where}.aliases", table.get("aliases", []))),
        reported_memory_gb=tuple(_positive(f"{where}.reported_memory_gb[{i}]", m) for i, m in enumerate(reported)),
        notes=_string(f"{where}.notes", notes) if notes is not None else None,
    )
    for key, allowed in (("vendor", VENDORS), ("form_factor", FORM_FACTORS), ("interconnect", INTERCONNECTS)):
        if getattr(spec, key) not in allowed:
            raise GpuCatalogError(f"{where}.{key}: {getattr(spec, key)!r} is not one of {sorted(allowed)}")
    # Ids are parsed by people and by sheets; keep them predictable: FAMILY[-TAG]-<memory>GB.
    if not _ID.fullmatch(spec.id) or not _ID.fullmatch(spec.family):
        raise GpuCatalogError(f"{where}: id and family must be upper-case letters, digits and dashes")
    if not spec.id.startswith(spec.family + "-"):
        raise GpuCatalogError(f"{where}: id must start with its family {spec.family!r}")
    if not spec.id.endswith(f"-{spec.memory_gb:g}GB"):
        raise GpuCatalogError(f"{where}: id must end with its memory, -{spec.memory_gb:g}GB")
    return spec


def _mig_from_table(where: str, table: Any) -> list[tuple[str, list[MigProfile]]]:
    """One [[mig]] entry: the cards it applies to, their compute-slice count and profile names."""
    if not isinstance(table, dict):
        raise GpuCatalogError(f"{where}: expected a table")
    unknown = set(table) - {"cards", "compute_slices", "profiles"}
    if unknown:
        raise GpuCatalogError(f"{where}: unknown field(s) {sorted(unknown)}")
    missing = [k for k in ("cards", "compute_slices", "profiles") if k not in table]
    if missing:
        raise GpuCatalogError(f"{where}: missing required field(s) {missing}")
    cards = _string_list(f"{where}.cards", table["cards"])
    of = table["compute_slices"]
    if isinstance(of, bool) or not isinstance(of, int) or not 1 < of <= 8:
        raise GpuCatalogError(f"{where}.compute_slices: must be a whole number from 2 to 8, got {of!r}")
    profiles: list[MigProfile] = []
    for i, name in enumerate(_string_list(f"{where}.profiles", table["profiles"])):
        m = _MIG_PROFILE_NAME.fullmatch(name)
        if m is None:
            raise GpuCatalogError(f"{where}.profiles[{i}]: {name!r} is not a <g>g.<memory>gb profile name")
        if int(m[1]) > of:
            raise GpuCatalogError(f"{where}.profiles[{i}]: {name!r} has more than {of} compute slices")
        profiles.append(MigProfile(name, int(m[1]), of, float(m[2])))
    if not cards or not profiles:
        raise GpuCatalogError(f"{where}: needs at least one card and one profile")
    return [(card, profiles) for card in cards]


def _positive(where: str, value: Any) -> float:
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if not is_number or not math.isfinite(value) or value <= 0:
        raise GpuCatalogError(f"{where}: must be a positive number, got {value!r}")
    return float(value)


def _string(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise GpuCatalogError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _string_list(where: str, value: Any) -> list[str]:
    if not isinstance(value, list):
        raise GpuCatalogError(f"{where}: expected a list of strings, got {value!r}")
    return [_string(f"{where}[{i}]", v) for i, v in enumerate(value)]


def _one_card(where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise GpuCatalogError(f"{where}: a raw name valid everywhere must name one card id, got {value!r}")
    return _string(where, value)


def _card_or_cards(where: str, value: Any) -> str | list[str]:
    return _string(where, value) if isinstance(value, str) else _string_list(where, value)


def _table_of(data: Mapping[str, Any], key: str, convert: Callable[[str, Any], Any]) -> dict[str, Any]:
    table = data.get(key, {})
    if not isinstance(table, dict):
        raise GpuCatalogError(f"{key}: expected a table")
    return {name: convert(f"{key}.{name}", value) for name, value in table.items()}


def _table_of_values(where: str, value: Any, convert: Callable[[str, Any], Any]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise GpuCatalogError(f"{where}: expected a table")
    return {name: convert(f"{where} {name!r}", v) for name, v in value.items()}


@cache
def get_catalog() -> GpuCatalog:
    """The shipped catalog, loaded and validated once per process."""
    text = (resources.files("tracker.catalog") / "gpus.toml").read_text(encoding="utf-8")
    return GpuCatalog.from_toml(text, source="tracker/catalog/gpus.toml")
