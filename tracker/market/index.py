"""The open GPU price index: the methodology, in code. docs/index-methodology.md says the same in words.

One daily value per basket of cards (a card family by default: every H100) and area (global, US, EU,
APAC), computed as a pure function of the change-only history (offers, their price rows, the providers'
successful observations) and a methodology version. Nothing is stored: the same history and version give
the same values, and a change of method is a new entry in METHODS under a new id, so a value once
published under "gpi-1" is never rewritten (tests pin each version's parameters by fingerprint).

Per UTC day, for one basket and area:

1. **Offers** pass `offer_excluded` (the one selection function: pricing, hosting; the integrator adds
   "asking and orderable" and "terms allow republication" there) and lie in the area.
2. **Time**: each price row counts the seconds of the day it was valid. An open row (the live price) holds
   until the offer was last seen plus its provider's freshness window (tracker.market.freshness), and a
   provider's outages (tracker.market.outages) are cut out, exactly as market history does: a provider
   that is down is absent for the hours it was down, never carried forward.
   A rate sheet counts only on days within the sheet age limit of its `as_of` (freshness.sheet_dates).
3. **Aggregator duplicates**: among the offers present that day, tracker.market.aggregated's `dedupe`
   rule (each machine once, its direct price preferred), with each offer's time-weighted mean price.
4. **Provider weight**: a provider's raw weight is its offer-seconds; shares are capped at
   `provider_cap` and the excess redistributed to the others in proportion (when too few providers for
   the cap to be met, all weigh the same). Within a provider its offers share its weight by seconds.
5. **Trimming**: `trim` of the weight is cut from each tail of the price distribution; the value is the
   weighted mean of what remains. Dispersion: the weighted p25 and p75 (untrimmed) and their spread.
6. **Publication**: a value is published when at least `min_providers` providers contributed; otherwise
   the day carries no value and says why.

Arithmetic is in float64 over exact integer microseconds, in one canonical order (the input is sorted
first), so a recomputation from an export gives bit-identical values; results are rounded by
tracker.money.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple

import numpy as np

from providers.registry import reference_providers
from tracker.catalog.locations import get_locations
from tracker.config import Settings
from tracker.market import aggregated, freshness
from tracker.market.outages import cut, silences
from tracker.market.quality import hosting_of
from tracker.money import to_money

__all__ = [
    "AREAS",
    "CURRENT",
    "METHODS",
    "IndexHistory",
    "IndexOffer",
    "IndexPrice",
    "IndexValue",
    "Method",
    "compute",
    "epoch_us",
    "fingerprint",
    "in_area",
    "method",
    "offer_excluded",
]

AREAS = ("global", "us", "eu", "apac")
_US = timedelta(microseconds=1)
_DAY_US = 86_400_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Method:
    """Every parameter of one version of the methodology (a new value means a new version id)."""

    version: str
    pricing: tuple[str, ...]  # pricing types that count
    hosting: str  # the effective hosting an offer must have (tracker.market.quality.hosting_of)
    reference_sheets: bool  # whether static rate sheets count (within the sheet age limit)
    provider_cap: float  # the most one provider's share of a day's weight may be
    trim: float  # share of the weight cut from each tail before the mean
    min_providers: int  # fewer contributing providers: no value that day
    asking_orderable_only: bool  # only asking prices that can be ordered at that price now (item 3)
    republishable_only: bool  # only sources this install may republish (tracker.market.data_terms, item 4)


METHODS: dict[str, Method] = {
    "gpi-1": Method(
        version="gpi-1",
        pricing=("on_demand",),
        hosting="datacenter",
        reference_sheets=True,
        provider_cap=0.25,
        trim=0.10,
        min_providers=3,
        asking_orderable_only=True,
        republishable_only=True,
    ),
}
CURRENT = "gpi-1"

# What each published version's parameters hash to: a test fails when a version's parameters change, so
# a change of method must come with a new version id.
FINGERPRINTS = {"gpi-1": "ce5e25df7bf3"}


def fingerprint(m: Method) -> str:
    """A short hash of a method's parameters (its version id included)."""
    text = json.dumps(asdict(m), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def method(version: str) -> Method:
    """The method of `version`; ValueError naming the known ones."""
    try:
        return METHODS[version]
    except KeyError:
        raise ValueError(f"version must be one of {', '.join(METHODS)}, got {version!r}") from None


@dataclass(frozen=True)
class IndexOffer:
    """What the index reads of an offer (the same columns in the database and in an export)."""

    provider: str
    offer_key: str
    gpu_id: str
    gpu_family: str
    gpu_count: Decimal
    pricing: str
    reserved_term: str | None
    region: str
    attributes: Mapping[str, Any]
    last_seen: datetime
    price_kind: str = "asking"  # asking | rented | traded | floor … (tracker.market.price_kinds)
    orderable: bool = True  # the price can be ordered now
    republish: bool = True  # tracker.market.data_terms.may_republish under this install's settings


class IndexPrice(NamedTuple):
    """One change-only price row, its instants as integer microseconds since the epoch (`epoch_us`): a
    tuple of plain values, so a year of them is built and read fast."""

    provider: str
    offer_key: str
    valid_from_us: int
    valid_to_us: int | None
    price_per_gpu_hour: float  # the stored exact decimal, as the nearest double (both sources round alike)


@dataclass
class IndexHistory:
    """The inputs: offers, their price rows, and each provider's successful observation instants (µs since
    the epoch, `epoch_us`)."""

    offers: list[IndexOffer]
    prices: list[IndexPrice]
    observations: dict[str, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class IndexValue:
    version: str
    basket: str
    area: str
    day: date
    value: Decimal | None  # None: not published (see `reason`)
    p25: Decimal | None
    p75: Decimal | None
    spread: Decimal | None  # (p75 - p25) / value
    offers: int
    providers: tuple[tuple[str, int, Decimal], ...]  # (provider, offers, capped weight share)
    reason: str | None = None

    @property
    def published(self) -> bool:
        return self.value is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "basket": self.basket,
            "area": self.area,
            "day": self.day,
            "value": self.value,
            "published": self.published,
            "p25": self.p25,
            "p75": self.p75,
            "spread": self.spread,
            "offers": self.offers,
            "providers": [{"provider": p, "offers": n, "weight": w} for p, n, w in self.providers],
            "reason": self.reason,
        }


def offer_excluded(offer: IndexOffer, m: Method) -> str | None:
    """Why `offer` does not count under `m` (None: it counts). The index's whole per-offer selection:
    a new rule (asking and orderable prices only, sources whose terms allow republication) is one more
    clause here, and, if it changes which offers count, a new Method field and version. The loaders
    fill each offer's price kind, orderability and republication (tracker.market.data_terms)."""
    if offer.pricing not in m.pricing:
        return "pricing"
    if m.asking_orderable_only and (offer.price_kind != "asking" or not offer.orderable):
        return "not an orderable asking price"
    if m.republishable_only and not offer.republish:
        return "terms forbid republication"
    if hosting_of(offer.provider, offer.attributes) != m.hosting:
        return "hosting"
    if not m.reference_sheets and offer.provider in reference_providers():
        return "reference"
    return None


def in_area(offer: IndexOffer, area: str) -> bool:
    """Whether the offer's region lies in `area` (tracker.catalog.locations): "us" is the country, "eu" and
    "apac" the areas of the region table; an unplaced region counts only in "global"."""
    if area == "global":
        return True
    place = get_locations().locate(offer.provider, offer.region)
    if place is None:
        return False
    if area == "us":
        return place.country == "us"
    return place.areas == (area,)


def epoch_us(t: datetime) -> int:
    """An instant as integer microseconds since the epoch (what IndexPrice holds)."""
    return (t - _EPOCH) // _US


_us = epoch_us


def _capped(raw: np.ndarray, cap: float) -> np.ndarray:
    """Shares of `raw` with none above `cap`, the excess redistributed in proportion to the rest; equal
    shares when there are too few for the cap to be met."""
    n = len(raw)
    if n * cap <= 1:
        return np.full(n, 1.0 / n)
    share = raw / raw.sum()
    fixed = np.zeros(n, dtype=bool)
    while True:
        over = ~fixed & (share > cap)
        if not over.any():
            result: np.ndarray = share
            return result
        fixed |= over
        free = ~fixed
        share = np.where(fixed, cap, share)
        rest = 1.0 - cap * fixed.sum()
        share[free] = raw[free] / raw[free].sum() * rest


def _quantile(prices: np.ndarray, weights: np.ndarray, q: float) -> float:
    """Inverted-CDF weighted quantile over prices sorted ascending (as tracker.market.statistics)."""
    cum = np.cumsum(weights)
    return float(prices[np.searchsorted(cum, q * cum[-1] - 1e-9 * cum[-1])])


def _trimmed_mean(prices: np.ndarray, weights: np.ndarray, trim: float) -> float:
    """Weighted mean of the distribution with `trim` of the weight cut from each tail (pieces straddling a
    cut count in part). Prices sorted ascending, weights summing to 1."""
    hi = np.cumsum(weights)
    lo = hi - weights
    kept = np.clip(np.minimum(hi, 1.0 - trim) - np.maximum(lo, trim), 0.0, None)
    return float((prices * kept).sum() / kept.sum())


def _money(value: float) -> Decimal:
    return to_money(round(value, 9))


def compute(
    history: IndexHistory,
    *,
    gpu_ids: Iterable[str],
    basket: str,
    start: date,
    end: date,
    settings: Settings,
    version: str = CURRENT,
    areas: Sequence[str] = AREAS,
) -> list[IndexValue]:
    """The index of the cards `gpu_ids` (labelled `basket`) for every UTC day in [start, end), per area."""
    m = method(version)
    for area in areas:
        if area not in AREAS:
            raise ValueError(f"area must be one of {', '.join(AREAS)}, got {area!r}")
    if end <= start:
        return []
    wanted = set(gpu_ids)
    offers = sorted(
        (o for o in history.offers if o.gpu_id in wanted and offer_excluded(o, m) is None),
        key=lambda o: (o.provider, o.offer_key),
    )
    start_us = _us(datetime(start.year, start.month, start.day, tzinfo=UTC))
    end_us = _us(datetime(end.year, end.month, end.day, tzinfo=UTC))
    spans = _spans(history, offers, start_us, end_us, settings)
    out: list[IndexValue] = []
    for area in areas:
        members = np.array([in_area(o, area) for o in offers], dtype=bool)
        out.extend(_days(offers, spans, members, m, basket, area, start, start_us, end_us, settings.sheet_max_age_days))
    return out


def _spans(
    history: IndexHistory, offers: list[IndexOffer], start_us: int, end_us: int, settings: Settings
) -> dict[str, np.ndarray]:
    """(offer, provider, lo, hi, price) of every price interval of the counted offers within [start, end),
    open ones held until last seen plus the freshness window, outages cut out; in canonical order."""
    index = {(o.provider, o.offer_key): i for i, o in enumerate(offers)}
    names = sorted({o.provider for o in offers})
    code = {n: i for i, n in enumerate(names)}
    window = {n: freshness.window(n, settings) // _US for n in names}
    prices = history.prices
    at = np.array([index.get((p[0], p[1]), -1) for p in prices], dtype=np.int64)
    lo = np.array([p[2] for p in prices], dtype=np.int64)
    to = np.array([-1 if p[3] is None else p[3] for p in prices], dtype=np.int64)
    price = np.array([float(p[4]) for p in prices], dtype=np.float64)
    # Canonical order (offer, valid_from): the sums below then run in the same order whatever the source.
    order = np.lexsort((lo, at))
    order = order[at[order] >= 0]
    offer, lo, to, price = at[order], lo[order], to[order], price[order]
    seen_until = np.array([_us(o.last_seen) + window[o.provider] for o in offers], dtype=np.int64)
    provider = np.array([code[o.provider] for o in offers], dtype=np.int64)
    hi = np.minimum(np.where(to < 0, seen_until[offer] if len(offer) else to, to), end_us)
    columns = {"offer": offer, "provider": provider[offer], "lo": lo, "hi": hi, "price": price}
    seen = {n: history.observations.get(n, []) for n in names}
    if dark := silences(seen, settings):
        columns = cut(dark, names, columns)
    columns["lo"] = np.maximum(columns["lo"], start_us)
    keep = columns["hi"] > columns["lo"]
    return {k: v[keep] for k, v in columns.items()}


@dataclass(frozen=True)
class _Columns:
    """Per counted offer, what a day needs, computed once: provider codes and names, the ordinal of a rate
    sheet's as_of (-1 for other providers) and whether the offer is a resale."""

    names: list[str]
    provider: np.ndarray
    sheet_day: np.ndarray
    resale: np.ndarray

    @classmethod
    def of(cls, offers: list[IndexOffer], sheets: Mapping[str, date]) -> _Columns:
        names = sorted({o.provider for o in offers})
        code = {n: i for i, n in enumerate(names)}
        return cls(
            names,
            np.array([code[o.provider] for o in offers], dtype=np.int64),
            np.array([sheets[o.provider].toordinal() if o.provider in sheets else -1 for o in offers], dtype=np.int64),
            np.array([bool(o.attributes.get("via")) for o in offers], dtype=bool),
        )


def _days(
    offers: list[IndexOffer],
    spans: dict[str, np.ndarray],
    members: np.ndarray,
    m: Method,
    basket: str,
    area: str,
    start: date,
    start_us: int,
    end_us: int,
    limit: int,
) -> list[IndexValue]:
    n_days = (end_us - start_us) // _DAY_US
    sel = members[spans["offer"]] if len(spans["offer"]) else np.zeros(0, dtype=bool)
    lo, hi = spans["lo"][sel], spans["hi"][sel]
    offer, price = spans["offer"][sel], spans["price"][sel]
    # Explode every interval into the days it spans, clipped to each day.
    first = (lo - start_us) // _DAY_US
    last = (hi - start_us - 1) // _DAY_US
    count = np.maximum(last - first + 1, 0)
    idx = np.repeat(np.arange(len(lo)), count)
    day = np.repeat(first, count) + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
    d_start = start_us + day * _DAY_US
    weight = (np.minimum(hi[idx], d_start + _DAY_US) - np.maximum(lo[idx], d_start)).astype(np.float64)
    order = np.argsort(day, kind="stable")
    idx, day, weight = idx[order], day[order], weight[order]
    bounds = np.searchsorted(day, np.arange(n_days + 1))
    cols = _Columns.of(offers, freshness.sheet_dates())
    out = []
    for d in range(n_days):
        a, b = bounds[d], bounds[d + 1]
        on = start + timedelta(days=d)
        out.append(_day(offers, cols, offer[idx[a:b]], price[idx[a:b]], weight[a:b], m, basket, area, on, limit))
    return out


def _day(
    offers: list[IndexOffer],
    cols: _Columns,
    offer: np.ndarray,
    price: np.ndarray,
    seconds: np.ndarray,
    m: Method,
    basket: str,
    area: str,
    on: date,
    limit: int,
) -> IndexValue:
    def empty(reason: str, providers: tuple[tuple[str, int, Decimal], ...] = (), n: int = 0) -> IndexValue:
        return IndexValue(m.version, basket, area, on, None, None, None, None, n, providers, reason)

    if not len(offer):
        return empty("no offers")
    # One entry per offer present: its seconds and time-weighted mean price over the day.
    n = len(offers)
    all_secs = np.bincount(offer, weights=seconds, minlength=n)
    ids = np.flatnonzero(all_secs > 0)
    secs = all_secs[ids]
    mean = np.bincount(offer, weights=price * seconds, minlength=n)[ids] / secs
    sheet = cols.sheet_day[ids]
    keep = (sheet < 0) | (on.toordinal() - sheet <= limit)
    if cols.resale[ids].any():
        listed = [offers[i] for i in ids.tolist()]
        keep = aggregated.dedupe(
            keep,
            provider=[o.provider for o in listed],
            via=[o.attributes.get("via") for o in listed],
            upstream=[o.attributes.get("upstream") for o in listed],
            gpu_id=[o.gpu_id for o in listed],
            gpu_count=[o.gpu_count for o in listed],
            pricing=[o.pricing for o in listed],
            reserved_term=[o.reserved_term for o in listed],
            price_per_gpu_hour=mean.tolist(),
            ids=ids.tolist(),
        )
    if not keep.any():
        return empty("no offers")
    ids, secs, mean = ids[keep], secs[keep], mean[keep]
    codes, provider = np.unique(cols.provider[ids], return_inverse=True)
    raw = np.bincount(provider, weights=secs)
    share = _capped(raw, m.provider_cap)
    n_offers = np.bincount(provider, minlength=len(codes))
    used = tuple(
        (cols.names[c], k, _money(w)) for c, k, w in zip(codes.tolist(), n_offers.tolist(), share.tolist(), strict=True)
    )
    if len(codes) < m.min_providers:
        return empty(f"{len(codes)} provider(s), fewer than the {m.min_providers} needed", used, len(ids))
    w = secs / raw[provider] * share[provider]
    order = np.lexsort((ids, mean))
    p, w = mean[order], w[order]
    w = w / w.sum()
    value = _trimmed_mean(p, w, m.trim)
    q25, q75 = _quantile(p, w, 0.25), _quantile(p, w, 0.75)
    return IndexValue(
        m.version,
        basket,
        area,
        on,
        _money(value),
        _money(q25),
        _money(q75),
        _money((q75 - q25) / value),
        len(ids),
        used,
    )
