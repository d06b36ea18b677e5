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
import itertools
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
    "PriceColumns",
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


@dataclass(frozen=True)
class PriceColumns:
    """The price rows as columns, what a database read fills straight from its cursor (a year is tens of
    thousands of rows): `offer` is the row's offer's position in IndexHistory.offers, an open row's
    `valid_to_us` is -1. The same rows as IndexPrice tuples give the same values."""

    offer: np.ndarray  # int64
    valid_from_us: np.ndarray  # int64
    valid_to_us: np.ndarray  # int64, -1: open
    price: np.ndarray  # float64, as IndexPrice.price_per_gpu_hour


@dataclass
class IndexHistory:
    """The inputs: offers, their price rows (IndexPrice tuples or PriceColumns), and each provider's
    successful observation instants (µs since the epoch, `epoch_us`)."""

    offers: list[IndexOffer]
    prices: list[IndexPrice] | PriceColumns
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
    everyone = history.offers
    counted = sorted(
        (i for i, o in enumerate(everyone) if o.gpu_id in wanted and offer_excluded(o, m) is None),
        key=lambda i: (everyone[i].provider, everyone[i].offer_key),
    )
    offers = [everyone[i] for i in counted]
    start_us = _us(datetime(start.year, start.month, start.day, tzinfo=UTC))
    end_us = _us(datetime(end.year, end.month, end.day, tzinfo=UTC))
    spans = _spans(history, offers, counted, start_us, end_us, settings)
    # Where an offer lies depends only on its provider and region: located once per pair, not per offer.
    placed: dict[tuple[str, str], list[bool]] = {}
    for o in offers:
        if (o.provider, o.region) not in placed:
            placed[(o.provider, o.region)] = [in_area(o, a) for a in areas]
    members = np.array([placed[(o.provider, o.region)] for o in offers], dtype=bool).reshape(len(offers), len(areas))
    return _series(offers, spans, members, m, basket, areas, start, start_us, end_us, settings.sheet_max_age_days)


def _spans(
    history: IndexHistory,
    offers: list[IndexOffer],
    counted: list[int],
    start_us: int,
    end_us: int,
    settings: Settings,
) -> dict[str, np.ndarray]:
    """(offer, provider, lo, hi, price) of every price interval of the counted offers within [start, end),
    open ones held until last seen plus the freshness window, outages cut out; in canonical order.
    `counted` holds the position in history.offers of each of `offers` (the counted ones, sorted)."""
    names = sorted({o.provider for o in offers})
    code = {n: i for i, n in enumerate(names)}
    window = {n: freshness.window(n, settings) // _US for n in names}
    prices = history.prices
    if isinstance(prices, PriceColumns):
        where = np.full(len(history.offers), -1, dtype=np.int64)
        where[np.array(counted, dtype=np.int64)] = np.arange(len(counted), dtype=np.int64)
        at = np.where(prices.offer >= 0, where[prices.offer], -1) if len(where) else np.full(len(prices.offer), -1)
        lo, to, price = prices.valid_from_us, prices.valid_to_us, prices.price
    else:
        index = {(o.provider, o.offer_key): i for i, o in enumerate(offers)}
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


def _bounds(sorted_keys: np.ndarray, n: int) -> np.ndarray:
    """Where each of the keys 0..n-1 starts in `sorted_keys` (and where the last ends): slice k is
    bounds[k]:bounds[k + 1]."""
    result: np.ndarray = np.searchsorted(sorted_keys, np.arange(n + 1))
    return result


def _series(
    offers: list[IndexOffer],
    spans: dict[str, np.ndarray],
    members: np.ndarray,
    m: Method,
    basket: str,
    areas: Sequence[str],
    start: date,
    start_us: int,
    end_us: int,
    limit: int,
) -> list[IndexValue]:
    """Every (area, day) value in one pass: steps 2 to 6 of the methodology over a table of (day, offer)
    rows shared by all areas (an offer's seconds and mean price on a day do not depend on the area), each
    area a mask over it. A *group* is one area's day, numbered area * n_days + day.

    Exactness: every sum runs over the same numbers in the same order as the rule applied to one group at
    a time (the method as first written), so the values are bit-identical to it. np.bincount adds in
    input order, and rows stay in (day, offer) order wherever it adds; the sums numpy does pairwise
    (ndarray.sum: a group's normalisation and trimmed mean, the cap's) run on each group's own slice, or,
    for the cap, on the rows of a table of groups with as many providers (a row of a C-contiguous table
    sums exactly as that row alone: tests/tracker/market/test_index.py pins both)."""
    n_days = (end_us - start_us) // _DAY_US
    n_areas, n_groups = len(areas), len(areas) * n_days
    cols = _Columns.of(offers, freshness.sheet_dates())
    n_names = max(len(cols.names), 1)
    lo, hi, offer, price = spans["lo"], spans["hi"], spans["offer"], spans["price"]

    # Time: explode every interval into the days it spans, clipped to each day.
    first = (lo - start_us) // _DAY_US
    last = (hi - start_us - 1) // _DAY_US
    count = np.maximum(last - first + 1, 0)
    idx = np.repeat(np.arange(len(lo)), count)
    day = np.repeat(first, count) + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
    d_start = start_us + day * _DAY_US
    weight = (np.minimum(hi[idx], d_start + _DAY_US) - np.maximum(lo[idx], d_start)).astype(np.float64)

    # The (day, offer) table: each row's seconds and time-weighted mean price. Pieces come nearly in
    # (offer, day) order already (spans are in (offer, valid_from) order), so a stable sort finds the rows
    # fast; the sums add the pieces in their own order, as a day's np.bincount over them does.
    key = offer[idx] * max(n_days, 1) + day
    by_key = np.argsort(key, kind="stable")
    sorted_key = key[by_key]
    starts = np.ones(len(sorted_key), dtype=bool)
    starts[1:] = sorted_key[1:] != sorted_key[:-1]
    row_of = np.empty(len(key), dtype=np.int64)
    row_of[by_key] = np.cumsum(starts) - 1
    secs = np.bincount(row_of, weights=weight, minlength=int(starts.sum()))
    value_secs = np.bincount(row_of, weights=price[idx] * weight, minlength=len(secs))
    rows = sorted_key[starts]
    present = secs > 0
    rows, secs, value_secs = rows[present], secs[present], value_secs[present]
    day_of = rows % max(n_days, 1)
    # To (day, offer) order: a stable sort by day (a radix sort when the days fit 16 bits).
    by_day = np.argsort(day_of.astype(np.int16) if n_days < 2**15 else day_of, kind="stable")
    rows, secs = rows[by_day], secs[by_day]
    t_day, t_offer, mean = rows % max(n_days, 1), rows // max(n_days, 1), value_secs[by_day] / secs
    t_provider = cols.provider[t_offer]
    day_bounds = _bounds(t_day, n_days)

    # Selection per area: members, rate sheets within the age limit, aggregator duplicates out (only on
    # the days an area has a resale).
    sheet = cols.sheet_day[t_offer]
    dated = (sheet < 0) | (start.toordinal() + t_day - sheet <= limit)
    keep = np.zeros((n_areas, len(t_day)), dtype=bool)
    for a in range(n_areas):
        keep[a] = members[t_offer, a] & dated
    resale = cols.resale[t_offer]
    for a in range(n_areas):
        for d in np.unique(t_day[members[t_offer, a] & resale]).tolist():
            at = day_bounds[d] + np.flatnonzero(members[t_offer[day_bounds[d] : day_bounds[d + 1]], a])
            listed = [offers[i] for i in t_offer[at].tolist()]
            keep[a, at] = aggregated.dedupe(
                keep[a, at],
                provider=[o.provider for o in listed],
                via=[o.attributes.get("via") for o in listed],
                upstream=[o.attributes.get("upstream") for o in listed],
                gpu_id=[o.gpu_id for o in listed],
                gpu_count=[o.gpu_count for o in listed],
                pricing=[o.pricing for o in listed],
                reserved_term=[o.reserved_term for o in listed],
                price_per_gpu_hour=mean[at].tolist(),
                ids=t_offer[at].tolist(),
            )

    # Provider weight: raw offer-seconds per (group, provider), added in offer order; then capped.
    cell = t_day * n_names + t_provider
    raw = np.zeros((n_areas, n_days * n_names))
    used = np.zeros((n_areas, n_days * n_names), dtype=np.int64)
    for a, k in enumerate(keep):
        cell_k = cell[k]
        raw[a] = np.bincount(cell_k, weights=secs[k], minlength=n_days * n_names)
        used[a] = np.bincount(cell_k, minlength=n_days * n_names)
    raw, used = raw.reshape(n_groups, n_names), used.reshape(n_groups, n_names)
    pairs = np.flatnonzero(used.ravel() > 0)  # (group, provider) present, in (group, code) order
    pair_group, pair_code = pairs // n_names, pairs % n_names
    n_providers = np.bincount(pair_group, minlength=n_groups)
    share = np.zeros(n_groups * n_names)
    share[pairs] = _capped_groups(raw.ravel()[pairs], pair_group, n_providers, m.provider_cap)
    published = n_providers >= m.min_providers

    # Trimming: each published group's prices ascending (ties by offer, the table's order within a day).
    by_price = np.concatenate(
        [np.argsort(mean[a:b], kind="stable") + a for a, b in itertools.pairwise(day_bounds.tolist())]
        or [np.zeros(0, dtype=np.int64)]
    )
    picked = [by_price[keep[a][by_price] & published[a * n_days + t_day[by_price]]] for a in range(n_areas)]
    p_row = np.concatenate(picked or [np.zeros(0, dtype=np.int64)])
    p_group = np.concatenate([a * n_days + t_day[r] for a, r in enumerate(picked)] or [p_row])
    p_cell = p_group * n_names + t_provider[p_row]
    p, w = mean[p_row], secs[p_row] / raw.ravel()[p_cell] * share[p_cell]
    p_bounds = _bounds(p_group, n_groups)
    wanted = np.flatnonzero(published).tolist()
    total = np.ones(n_groups)
    for g in wanted:
        total[g] = w[p_bounds[g] : p_bounds[g + 1]].sum()
    w = w / total[p_group]
    cum = np.empty_like(w)
    for g in wanted:
        a, b = p_bounds[g], p_bounds[g + 1]
        np.cumsum(w[a:b], out=cum[a:b])
    kept = np.clip(np.minimum(cum, 1.0 - m.trim) - np.maximum(cum - w, m.trim), 0.0, None)
    priced = p * kept
    value = np.ones(n_groups)
    for g in wanted:
        a, b = p_bounds[g], p_bounds[g + 1]
        value[g] = priced[a:b].sum() / kept[a:b].sum()
    q25, q75 = (_quantiles(p, cum, p_group, p_bounds, np.array(wanted, dtype=np.int64), q) for q in (0.25, 0.75))

    # Publication: the values, area by area, day by day.
    names = [cols.names[c] for c in pair_code.tolist()]
    pair_used = used.ravel()[pairs].tolist()
    pair_share = _money_all(share[pairs])
    g_pairs = _bounds(pair_group, n_groups).tolist()
    n_offers = used.sum(axis=1).tolist()
    figures = _money_all(np.concatenate((value, q25, q75, (q75 - q25) / value)))
    days = [start + timedelta(days=d) for d in range(n_days)]
    out = []
    for g in range(n_groups):
        area, on = areas[g // n_days], days[g % n_days]
        a, b = g_pairs[g], g_pairs[g + 1]
        if a == b:  # nobody that day (or only duplicates and stale sheets)
            out.append(IndexValue(m.version, basket, area, on, None, None, None, None, 0, (), "no offers"))
            continue
        providers = tuple(zip(names[a:b], pair_used[a:b], pair_share[a:b], strict=True))
        if not published[g]:
            reason = f"{b - a} provider(s), fewer than the {m.min_providers} needed"
            out.append(IndexValue(m.version, basket, area, on, None, None, None, None, n_offers[g], providers, reason))
            continue
        v, lo25, hi75, spread = (figures[g + k * n_groups] for k in range(4))
        out.append(IndexValue(m.version, basket, area, on, v, lo25, hi75, spread, n_offers[g], providers))
    return out


def _capped_groups(raw: np.ndarray, group: np.ndarray, n_providers: np.ndarray, cap: float) -> np.ndarray:
    """`_capped` of every group at once: `raw` holds each group's providers' weights, consecutive, in
    group order (`group` says whose). Groups with the same number of providers form one table."""
    share = np.empty(len(raw))
    n = n_providers[group]
    equal = n * cap <= 1
    share[equal] = 1.0 / n[equal]
    for k in np.unique(n[~equal]).tolist():
        rows = n == k
        share[rows] = _capped_rows(raw[rows].reshape(-1, k), cap).ravel()
    return share


def _capped_rows(raw: np.ndarray, cap: float) -> np.ndarray:
    """`_capped` of each row of `raw` (rows of more than 1 / cap weights), the same operations in the same
    order; a masked row's sum is taken over its compacted row, as `raw[free].sum()` is."""
    share = raw / raw.sum(axis=1, keepdims=True)
    fixed = np.zeros(raw.shape, dtype=bool)
    while True:
        over = ~fixed & (share > cap)
        rows = over.any(axis=1)
        if not rows.any():
            result: np.ndarray = share
            return result
        fixed |= over
        free = ~fixed
        share = np.where(fixed, cap, share)
        rest = 1.0 - cap * fixed.sum(axis=1)
        n_free = free.sum(axis=1)
        for f in np.unique(n_free[rows]).tolist():
            if f == 0:
                continue
            sel = rows & (n_free == f)
            mask = free[sel]
            compact = raw[sel][mask].reshape(-1, f)
            part = share[sel]
            part[mask] = (compact / compact.sum(axis=1, keepdims=True) * rest[sel][:, None]).ravel()
            share[sel] = part


def _quantiles(
    p: np.ndarray, cum: np.ndarray, group: np.ndarray, bounds: np.ndarray, wanted: np.ndarray, q: float
) -> np.ndarray:
    """`_quantile` of every wanted group at once (group g's prices are p[bounds[g]:bounds[g + 1]], `cum`
    their cumulative weights): the index np.searchsorted finds in a nondecreasing array is the number of
    entries below the target, counted per group."""
    out = np.zeros(len(bounds) - 1)
    if not len(wanted):
        return out
    last = cum[bounds[wanted + 1] - 1]
    target = np.zeros(len(bounds) - 1)
    target[wanted] = q * last - 1e-9 * last
    below = np.bincount(group[cum < target[group]], minlength=len(bounds) - 1)
    out[wanted] = p[bounds[wanted] + below[wanted]]
    return out


def _money_all(x: np.ndarray) -> list[Decimal]:
    """`_money` of each of `x`, each distinct value rounded once: a year of values repeats many (a capped
    provider's 0.25, a listing's unchanged price as a quartile day after day), and each builds a Decimal."""
    unique, inverse = np.unique(x, return_inverse=True)
    rounded = [_money(v) for v in unique.tolist()]
    out = [rounded[i] for i in inverse.tolist()]
    for i in np.flatnonzero(x == 0).tolist():  # one value to np.unique, two Decimals (0.000000, -0.000000)
        out[i] = _money(float(x[i]))
    return out
