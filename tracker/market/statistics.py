"""Market statistics of $/GPU-hour: the distribution now, and over time, per card and pricing type.

Never blended: every statistic is for one card (SXM and PCIe apart) and one pricing type, and a reserved
price for one term (a 1-year and a 3-year rate are different prices; on-demand and spot have none). Nor
are asking prices blended with trades, rented rates or floors: only orderable asking prices count unless
a caller asks for other kinds (tracker.market.price_kinds).

Aggregators (tracker.market.aggregated): `aggregated="include"` counts every listed offer, "exclude"
only direct ones, "dedupe" each machine once (its direct price preferred). `aggregated_offers` says how
many of the counted offers are resales. Rate sheets whose prices are older than the sheet age limit
(tracker.market.freshness.sheet_ages) are named in `stale_sheets` of every statistic they count in.

Percentiles are weighted and use the inverted-CDF definition (the smallest price whose cumulative
weight reaches q of the total), so every reported value is a price someone actually listed. Now, each
fresh offer weighs 1. Over time, an offer-price interval weighs the seconds it overlaps the bucket,
so an offer counts in a bucket exactly while it was listed, and a price that held for an hour of a
day weighs 1/24 of one that held all day. An open interval (the live price) is taken to hold until
the offer was last seen plus its provider's freshness window (tracker.market.freshness), never
beyond "now": a provider that stopped answering does not keep its old prices alive in the history.

Over time, `aggregated` is the same rule (`tracker.market.aggregated.mask`), applied bucket by bucket to
the offers listed in that bucket: a resale is dropped in the buckets where its owner's direct offer (or a
cheaper resale of it, by its lowest price in the bucket) is there too, and stands in for it elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Float, cast, or_, select
from sqlalchemy.orm import Session

from providers.contract import ProviderError
from providers.parsing import reservation_term
from providers.registry import reference_providers
from tracker.config import Settings
from tracker.market import aggregated as resales
from tracker.market import freshness
from tracker.market import price_kinds as kinds
from tracker.market.outages import cut, outages
from tracker.market.table import positions
from tracker.money import to_money
from tracker.storage.sql import epoch_us, read_columns
from tracker.storage.tables import Offer, OfferPrice

if TYPE_CHECKING:
    import pandas as pd

QUANTILES = {"p25": 0.25, "median": 0.5, "p75": 0.75}
INTERVALS = {"1h": timedelta(hours=1), "1d": timedelta(days=1), "1w": timedelta(weeks=1)}


def weighted_quantiles(prices: np.ndarray, weights: np.ndarray) -> dict[str, float]:
    """Inverted-CDF weighted quantiles of one group (prices need not be sorted)."""
    order = np.argsort(prices, kind="stable")
    p, w = prices[order], weights[order]
    cum = np.cumsum(w)
    total = cum[-1]
    return {name: float(p[np.searchsorted(cum, q * total - 1e-9 * total)]) for name, q in QUANTILES.items()}


def _dec(value: float) -> Decimal:
    return to_money(float(value))


@dataclass
class MarketStat:
    gpu: str
    gpu_family: str
    pricing: str
    min: Decimal
    p25: Decimal
    median: Decimal
    p75: Decimal
    max: Decimal
    offers: int
    providers: int
    reference_only: bool
    freshest: datetime
    stalest: datetime
    reserved_term: str | None = None  # the commitment of a reserved price ("1y", "3mo"); None otherwise
    aggregated_offers: int = 0  # counted offers that reach us through an aggregator
    stale_sheets: list[str] = field(default_factory=list)  # counted rate sheets past the age limit

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def snapshot(
    frame: pd.DataFrame,
    *,
    fresh: np.ndarray,
    gpu_ids: Sequence[str] | None = None,
    pricing: Sequence[str] | None = None,
    include_reference: bool = True,
    aggregated: str = "include",
    stale_sheets: frozenset[str] = frozenset(),
    price_kinds: Sequence[str] | None = None,
) -> list[MarketStat]:
    """Distribution of current $/GPU-hour per card × pricing type (× reservation term) over the fresh
    offers of the live frame; of orderable asking prices unless `price_kinds` asks for others
    (tracker.market.price_kinds)."""
    mask = fresh.copy()
    if "price_kind" in frame:
        mask &= kinds.kinds_mask(frame["price_kind"].to_numpy(), frame["orderable"].to_numpy(), price_kinds)
    if gpu_ids:
        mask &= frame["gpu_id"].isin(list(gpu_ids)).to_numpy()
    if pricing:
        mask &= frame["pricing"].isin(list(pricing)).to_numpy()
    if not include_reference:
        mask &= ~frame["reference"].to_numpy()
    if "via" in frame:  # last: a machine counts once among the offers the other filters kept
        mask = resales.mask(frame, mask, aggregated)
    df = frame[mask]
    # A term only where the price is reserved: a stray term on an on-demand row must not split its group.
    terms = df["reserved_term"].where(df["pricing"] == "reserved", None) if len(df) else df["reserved_term"]
    df = df.assign(term=terms.fillna("").astype(str))
    out = []
    for (gpu, family, kind, term), g in df.groupby(["gpu_id", "gpu_family", "pricing", "term"], sort=True):
        prices = g["price_per_gpu_hour_f"].to_numpy()
        q = weighted_quantiles(prices, np.ones_like(prices))
        counted = set(g["provider"])
        via = g.get("via", ())
        out.append(
            MarketStat(
                gpu=str(gpu),
                gpu_family=str(family),
                pricing=str(kind),
                min=_dec(prices.min()),
                p25=_dec(q["p25"]),
                median=_dec(q["median"]),
                p75=_dec(q["p75"]),
                max=_dec(prices.max()),
                offers=len(g),
                providers=g["provider"].nunique(),
                reference_only=bool(g["reference"].all()),
                freshest=g["last_seen"].max().to_pydatetime(),
                stalest=g["last_seen"].min().to_pydatetime(),
                reserved_term=str(term) or None,
                aggregated_offers=sum(1 for v in via if isinstance(v, str) and v),
                stale_sheets=sorted(counted & stale_sheets),
            )
        )
    return out


class TermError(ValueError):
    """A reservation term missing, unreadable, or given with a pricing type that has none; names `field`."""

    def __init__(self, message: str, field: str = "term") -> None:
        super().__init__(message)
        self.field = field


def commitment(pricing: str, term: str | None, field: str = "term") -> str | None:
    """The term a statistic of `pricing` is for, in the one spelling offers use (providers.parsing.reservation_term:
    "12mo" and "1-year" are "1y"). A reserved price needs its term: a distribution over every term would mix a
    1-day rate with a 3-year one. On-demand and spot have none."""
    if pricing != "reserved":
        if term:
            raise TermError(f"{field} is only for reserved prices, not {pricing}", field)
        return None
    if not term:
        raise TermError(f"a reserved price needs its {field} (1d, 7d, 1mo, 3mo, 1y, 3y), never a blend", field)
    try:
        return reservation_term(term, field)
    except ProviderError:
        raise TermError(f"{field} must be a commitment like 1d, 7d, 1mo, 3mo, 1y or 3y, got {term!r}", field) from None


def _floor(t: datetime, step: timedelta, origin: datetime) -> datetime:
    return origin + ((t - origin) // step) * step


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


def _us(t: datetime) -> int:
    return (t - _EPOCH) // _US


def _decimals(values: np.ndarray) -> list[Decimal]:
    """_dec of every value, converting each distinct price once."""
    distinct, inverse = np.unique(values, return_inverse=True)
    decs = [_dec(v) for v in distinct.tolist()]
    return [decs[i] for i in inverse.ravel().tolist()]


def _distinct_per_group(group: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """How many distinct codes (non-negative ints) each group holds."""
    width = int(codes.max()) + 1
    if n_groups * width <= _SEEN_CELLS:
        # A group x code table of flags: one scatter and one sum, where sorting the pairs (np.unique) cost
        # 65 ms per call over half a million pieces (a year of a card by day at 10x).
        seen = np.zeros((n_groups, width), dtype=bool)
        seen[group, codes] = True
        counts: np.ndarray = seen.sum(axis=1)
        return counts
    pairs = np.unique(group * width + codes)
    return np.bincount(pairs // width, minlength=n_groups)


_SEEN_CELLS = 1 << 24  # 16 MB of flags at most; past it, sorting the pairs costs less memory


def _bucket_pieces(
    lo: np.ndarray, hi: np.ndarray, first_us: int, step_us: int, end_us: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(interval index, bucket, weight in µs) of every non-empty piece of an interval within one bucket."""
    first_bucket = np.maximum((lo - first_us) // step_us, 0)
    last_bucket = (hi - first_us - 1) // step_us
    spans = np.maximum(last_bucket - first_bucket + 1, 0)
    idx = np.repeat(np.arange(len(lo)), spans)
    bucket = np.repeat(first_bucket, spans) + (np.arange(spans.sum()) - np.repeat(np.cumsum(spans) - spans, spans))
    b_start = first_us + bucket * step_us
    weight = np.minimum(hi[idx], np.minimum(b_start + step_us, end_us)) - np.maximum(lo[idx], b_start)
    piece = weight > 0
    if not piece.any():
        return None
    return idx[piece], bucket[piece], weight[piece]


def _without_outages(
    session: Session,
    settings: Settings,
    names: list[str],
    start: datetime,
    end: datetime,
    columns: dict[str, np.ndarray],
) -> tuple[np.ndarray, ...]:
    """(lo, hi, price, offer, provider) with every provider's outages cut out (tracker.market.outages)."""
    if dark := outages(session, settings, names, end, start):
        columns = cut(dark, names, columns)
    return tuple(columns[k] for k in ("lo", "hi", "price", "offer", "provider"))


# What the aggregated rule needs of each offer (tracker.market.aggregated.mask reads these names).
_MACHINE = ("via", "upstream", "gpu_id", "gpu_count_f", "pricing", "reserved_term")


@dataclass(frozen=True, slots=True)
class _Intervals:
    """The price rows overlapping a window, as arrays, and the offers they belong to (one entry each)."""

    offer: np.ndarray  # per row: the offer's position in the offer arrays
    lo: np.ndarray  # valid_from, µs since the epoch
    to: np.ndarray  # valid_to, µs; NaN while open
    price: np.ndarray  # $/GPU-h (the nearest double)
    seen: np.ndarray  # per offer: last seen, µs
    provider: np.ndarray  # per offer (object)
    ids: np.ndarray  # per offer: its id
    machine: dict[str, np.ndarray]  # per offer: _MACHINE (only the term unless asked for)


def _interval_rows(
    session: Session,
    gpu_ids: Sequence[str],
    pricing: str,
    term: str | None,
    first: datetime,
    end: datetime,
    include_reference: bool,
    price_kinds: Sequence[str] | None = None,
    *,
    machine: bool = True,
) -> _Intervals | None:
    """Every price row overlapping [first, end) of one pricing type and (reserved) one term, with its offer.

    Two reads rather than one join: the price rows alone (four numbers each, read as arrays:
    `read_columns`; on Postgres an index-only scan of `ix_offer_prices_history`), then the few offers they
    name (a year of a card at 10x: 185,000 rows of 1,600 offers; the join and its per-row strings cost
    more than the rows' own read). The offer's term and provider filter the rows afterwards. `machine`:
    read what the aggregated rule needs of each offer (`_MACHINE`; JSON lookups), else only its term."""
    price_cols = read_columns(
        session,
        select(
            OfferPrice.offer_id,
            OfferPrice.valid_from,
            OfferPrice.valid_to,
            cast(OfferPrice.price_per_gpu_hour, Float),
        ).where(
            OfferPrice.gpu_id.in_(gpu_ids),
            OfferPrice.pricing == pricing,
            # Each row's own kind: a server's rented stretches never count as its asking price.
            kinds.kinds_condition(price_kinds, OfferPrice),
            OfferPrice.valid_from < end,
            or_(OfferPrice.valid_to.is_(None), OfferPrice.valid_to > first),
        ),
        ("int", "instant", "instant", "float"),
    )
    row_offer, lo, to_us, price = price_cols
    if not len(row_offer):
        return None
    labels = resales.columns()
    names = _MACHINE if machine else ("reserved_term",)
    columns = {
        "via": labels["via"],
        "upstream": labels["upstream"],
        "gpu_id": Offer.gpu_id,
        "gpu_count_f": cast(Offer.gpu_count, Float),
        "pricing": Offer.pricing,
        "reserved_term": Offer.reserved_term,
    }
    offers = select(Offer.id, epoch_us(Offer.last_seen), Offer.provider, *(columns[n] for n in names))
    # The card's offers of this pricing type by their own index: what a price row names, but for an offer
    # listed as another card since (its rows keep the card they were priced as), read by id after.
    offer_rows: list[Any] = list(
        session.execute(offers.where(Offer.gpu_id.in_(gpu_ids), Offer.pricing == pricing)).all()
    )
    known = np.array([r[0] for r in offer_rows], dtype=np.int64)
    others = np.unique(row_offer[~positions(known, row_offer)[1]])
    for chunk in range(0, len(others), _ID_CHUNK):
        offer_rows += session.execute(offers.where(Offer.id.in_(others[chunk : chunk + _ID_CHUNK].tolist()))).all()
    o_id, o_seen, o_provider, *offer_cols = zip(*offer_rows, strict=True) if offer_rows else ((),) * (3 + len(names))
    o_ids = np.array(o_id, dtype=np.int64)
    provider = np.array(o_provider, dtype=object)
    per_offer = {name: np.array(col, dtype=object) for name, col in zip(names, offer_cols, strict=True)}
    # The term is read from the offer, not copied onto each price row: exact because every adapter puts
    # the term in the offer key (a 1-year and a 3-year price of one machine are two offers), so an offer's
    # term never changes under its history.
    wanted = np.ones(len(o_ids), dtype=bool)
    if term is not None:
        wanted &= per_offer["reserved_term"] == term
    if not include_reference and (refs := reference_providers()):
        wanted &= ~np.isin(provider, list(refs))
    pos, found = positions(o_ids, row_offer)
    keep = found & wanted[pos]
    if not keep.any():
        return None
    return _Intervals(
        offer=pos[keep],
        lo=lo[keep],
        to=np.where(to_us[keep] < 0, np.nan, to_us[keep].astype(np.float64)),
        price=price[keep],
        seen=np.array(o_seen, dtype=np.int64),
        provider=provider,
        ids=o_ids,
        machine=per_offer,
    )


# Offer ids per IN list (SQLite binds at most 32,766 parameters per statement).
_ID_CHUNK = 10_000


def history(
    session: Session,
    *,
    gpu_ids: Sequence[str],
    pricing: str,
    interval: str,
    start: datetime,
    end: datetime,
    now: datetime,
    settings: Settings,
    include_reference: bool = True,
    reserved_term: str | None = None,
    price_kinds: Sequence[str] | None = None,
    aggregated: str = "include",
) -> list[dict[str, Any]]:
    """Bucketed statistics over [start, end), computed exactly from the change-only history, for one pricing
    type and, when reserved, one term (`commitment`: required, so terms are never blended; TermError otherwise),
    of orderable asking prices unless `price_kinds` asks for others; resales counted as `aggregated` says
    (module docstring).

    Instants are whole microseconds since the epoch (int64) throughout, so every weight is exact.
    """
    step = INTERVALS[interval]
    origin = start.replace(hour=0, minute=0, second=0, microsecond=0)
    if interval == "1w":  # weeks start on Monday
        origin -= timedelta(days=origin.weekday())
    first = _floor(start, step, origin)
    end = min(end, now)
    term = commitment(pricing, reserved_term)
    resales.check(aggregated)
    rows = _interval_rows(
        session, gpu_ids, pricing, term, first, end, include_reference, price_kinds, machine=aggregated != "include"
    )
    if rows is None:
        return []
    lo, to, price, offer_code = rows.lo, rows.to, rows.price, rows.offer
    names, offer_provider = np.unique(rows.provider, return_inverse=True)
    provider_code = offer_provider.ravel()[offer_code]
    window = np.array([freshness.window(n, settings) // _US for n in names.tolist()], dtype=np.int64)
    end_us, first_us, step_us = _us(end), _us(first), step // _US
    # An open interval holds until last seen plus the provider's freshness window, never beyond `end`.
    open_until = np.minimum(rows.seen[offer_code] + window[provider_code], end_us)
    is_open = np.isnan(to)
    hi = np.where(is_open, open_until, np.nan_to_num(to).astype(np.int64))
    columns = {"lo": lo, "hi": hi, "price": price, "offer": offer_code, "provider": provider_code}
    lo, hi, price, offer_code, provider_code = _without_outages(session, settings, names.tolist(), first, end, columns)
    keep = hi > lo
    if not keep.any():
        return []
    # In price order, so that the pieces come out in price order and one stable sort by bucket
    # puts them in (bucket, price) order (_bucket_rows): a lexsort of the pieces cost three times as much.
    kept = np.flatnonzero(keep)
    kept = kept[np.argsort(price[kept])]  # ties in any order: equal prices count alike
    lo, hi, price, offer_code, provider_code = lo[kept], hi[kept], price[kept], offer_code[kept], provider_code[kept]

    # Explode each interval into the buckets it spans, clipped to each bucket.
    pieces = _bucket_pieces(lo, hi, first_us, step_us, end_us)
    if pieces is None:
        return []
    idx, bucket, weight = pieces
    if aggregated != "include":
        offers = dict(rows.machine)
        offers["provider"] = rows.provider
        offers["gpu_count_f"] = offers["gpu_count_f"].astype(np.float64)
        offers["id"] = rows.ids
        kept = _resales_kept(offers, offer_code[idx], bucket, price[idx], aggregated)
        idx, bucket, weight = idx[kept], bucket[kept], weight[kept]
        if not len(idx):
            return []

    return _bucket_rows(idx, bucket, weight, price, offer_code, provider_code, first, step)


def _resales_kept(
    offers: dict[str, np.ndarray], offer: np.ndarray, bucket: np.ndarray, price: np.ndarray, mode: str
) -> np.ndarray:
    """Which pieces (offer, bucket, price) the aggregated rule keeps, judged in each bucket among the offers
    listed in it, an offer priced at its lowest there (`resales.mask`, the rule the market applies now)."""
    pairs, piece_pair = np.unique(bucket * len(offers["id"]) + offer, return_inverse=True)
    piece_pair = piece_pair.ravel()
    pair_offer, pair_bucket = pairs % len(offers["id"]), pairs // len(offers["id"])
    low = np.full(len(pairs), np.inf)
    np.minimum.at(low, piece_pair, price)
    table = {name: column[pair_offer] for name, column in offers.items()} | {"price_per_gpu_hour_f": low}
    if mode == "exclude":  # offer by offer: no bucket needs the others
        keep = resales.mask(table, np.ones(len(pairs), dtype=bool), mode)
    else:
        keep = np.zeros(len(pairs), dtype=bool)
        for b in np.unique(pair_bucket).tolist():
            keep |= resales.mask(table, pair_bucket == b, mode)
    kept: np.ndarray = keep[piece_pair]
    return kept


def _bucket_rows(
    idx: np.ndarray,
    bucket: np.ndarray,
    weight: np.ndarray,
    price: np.ndarray,
    offer_code: np.ndarray,
    provider_code: np.ndarray,
    first: datetime,
    step: timedelta,
) -> list[dict[str, Any]]:
    # All buckets at once: sort by (bucket, price); one cumulative weight; each bucket a contiguous run. The
    # pieces are in price order already (history), so a stable sort by bucket is enough: a radix sort when
    # the buckets fit 16 bits (a year by day, a month by hour).
    key = bucket.astype(np.uint16) if len(bucket) and int(bucket.max()) < 1 << 16 else bucket
    order = np.argsort(key, kind="stable")
    idx, bucket, weight = idx[order], bucket[order], weight[order]
    prices = price[idx]
    cum = np.cumsum(weight)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(bucket)) + 1))
    stops = np.concatenate((starts[1:], [len(bucket)]))
    total = np.add.reduceat(weight, starts)
    before = cum[starts] - weight[starts]
    stats = {"min": prices[starts], "max": prices[stops - 1]}
    for name, q in QUANTILES.items():
        # weighted_quantiles' rule, in exact integer weights: the first price whose cumulative weight
        # within the bucket reaches q·total − 1e-9·total (≥ 1, so the search stays inside the bucket).
        reach = np.ceil(q * total - 1e-9 * total).astype(np.int64)
        stats[name] = prices[np.searchsorted(cum, before + reach, side="left")]
    group = np.repeat(np.arange(len(starts)), stops - starts)
    offers = _distinct_per_group(group, offer_code[idx], len(starts)).tolist()
    providers = _distinct_per_group(group, provider_code[idx], len(starts)).tolist()
    stat_names = ("min", "p25", "median", "p75", "max")
    decs = _decimals(np.stack([stats[c] for c in stat_names]))
    n = len(starts)
    first_utc, tz = first.astimezone(UTC), first.tzinfo
    return [
        {
            "bucket": (first_utc + step * b).astimezone(tz),
            **{c: decs[k * n + i] for k, c in enumerate(stat_names)},
            "offers": offers[i],
            "providers": providers[i],
        }
        for i, b in enumerate(bucket[starts].tolist())
    ]


__all__ = ["INTERVALS", "MarketStat", "TermError", "commitment", "history", "snapshot", "weighted_quantiles"]
