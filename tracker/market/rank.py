"""Rank live offers for one fine-tuning job by cost per run, hours, or $ per million tokens.

The estimate depends only on (card, GPU count[, slice memory]), and a market of 20,000 offers has a
few hundred such combinations, so each combination is estimated once and the per-offer arithmetic
(price × GPUs × hours) is vectorised over the live frame.

Order: offers the job fits first; then every offer not known to be sold out before those the provider says
are unavailable now (`available` false: no choice today, so they rank last and their row says
`unavailable`; an offer whose provider does not say is not "sold out"); then the sort key, price and id.
`one_per_listing` keeps the best offer of each listing (provider, pricing, term and instance type; a resale
by its upstream and card) with `listings` and `other_regions` counting the rest (the CLI's default table).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np
from pydantic import Field

from tracker import money
from tracker.catalog.gpus import get_catalog
from tracker.costs import RunPlan, TermColumns, run_cost, run_total, vector_totals
from tracker.estimate import PreparedJob
from tracker.estimate.serving import PreparedServing, ServingEstimate
from tracker.estimate.throughput import hours_for
from tracker.market import fabric, serving_rows
from tracker.market.filters import OfferFilters, warm_filters
from tracker.market.live import epoch_us
from tracker.market.table import OfferTable

SortKey = Literal["cost_per_run", "hours", "usd_per_mtok"]
# A ranking prices live offers only (it is handed the fresh ones): "only stale offers" is no ranking.
RANKS_LIVE = "Rankings count live offers only: true, or unset."


class RankFilters(OfferFilters):
    """The offer filters, plus what only a ranking asks: the cards, and a cap on the run's hours."""

    gpu_ids: list[str] | None = None
    max_hours: float | None = Field(None, gt=0)
    live: Literal[True] | None = Field(None, description=RANKS_LIVE)


@dataclass
class RankOptions:
    sort_by: SortKey = "cost_per_run"
    include_unfit: bool = False
    best_per_card: bool = False
    limit: int = 50
    gpu_only: bool = False  # cost_per_run is $/hour × hours alone, not the whole run (tracker.costs)
    # One row per listing (provider, instance type, pricing; a resale: its upstream and card), at its best region,
    # with the rest counted: the same machine in three regions is one choice, not three places in a top 20.
    one_per_listing: bool = False


if TYPE_CHECKING:  # type-only: numpy.typing costs a command-line call ~10 ms to import
    import numpy.typing as npt

    Mask: TypeAlias = npt.NDArray[np.bool_]


# A reserved price needs a commitment (a 1- or 3-year term, a capacity block): it is not a price for the
# same run as on-demand, so it competes only when asked for (pricing=["reserved"]). A run counts spot too
# (its whole cost prices the expected interruptions); traffic is on-demand (tracker.market.serving_rows).
RUN_PRICING = ("on_demand", "spot")


def default_pricing(serving: bool) -> tuple[str, ...]:
    """The pricing types a ranking (and the plan, which ranks the same way) counts when none is asked for."""
    return serving_rows.SERVING_PRICING if serving else RUN_PRICING


def filter_mask(
    table: OfferTable, fresh: Mask, f: RankFilters, *, serving: bool = False, stale: Collection[str] = ()
) -> Mask:
    """The offers a ranking counts: live, passing `f`, under the default pricing, and no rate sheet in
    `stale` (tracker.market.freshness.stale_sheets) unless `f.include_stale`."""
    keep = fresh
    if f.gpu_ids:  # before the filters: resales are deduplicated among the offers kept
        allowed = set(f.gpu_ids)
        keep = fresh & np.fromiter((g in allowed for g in table["gpu_id"]), dtype=bool, count=len(table))
    return f.mask(table, keep, default_pricing=default_pricing(serving), fresh=fresh, stale=stale)


# What one estimate contributes to each offer of its (card, GPU count, slice memory).
ESTIMATE_FIELDS = (
    "tokens_per_second",
    "hours",
    "vram_gb",
    "card_memory_gb",
    "fits",
    "efficiency",
    "multi_gpu_efficiency",
    "band_low",
    "band_high",
    "request_s",
)
# Estimate fields the ranking uses but rows do not carry (a serving request's life prices spot uptime).
_INTERNAL_FIELDS = ("request_s",)
# (card, GPUs, slice memory, inter-node GB/s per GPU: None for an offer within one node).
ComboKey = tuple[str, float, float | None, float | None]


def _combo_codes(
    cards: np.ndarray, gpus: np.ndarray, slice_gb: np.ndarray, inter: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A code per offer for its distinct (card code, GPU count, slice memory, inter-node link), and the first
    offer of each code."""
    # np.unique groups NaN slice memories (whole GPUs) together; codes follow sorted order, which is
    # as good as first appearance here: only the grouping matters.
    _, n = np.unique(gpus, return_inverse=True)
    _, m = np.unique(slice_gb, return_inverse=True)
    _, k = np.unique(inter if inter is not None else np.full(len(gpus), np.nan), return_inverse=True)
    combined = ((cards.astype(np.int64) * (n.max(initial=0) + 1) + n) * (m.max(initial=0) + 1) + m) * (
        k.max(initial=0) + 1
    ) + k
    _, first, codes = np.unique(combined, return_index=True, return_inverse=True)  # first: each code's first offer
    return codes.astype(np.intp).ravel(), first.astype(np.intp)


def _estimate(prepared: PreparedJob | PreparedServing, key: ComboKey) -> tuple[Any, ...]:
    gpu_id, gpus, slice_gb, inter = key
    card = get_catalog().get(gpu_id)
    est: Any
    if inter is not None and isinstance(prepared, PreparedJob):  # several nodes: the network bounds the ring
        est = prepared.on(card, gpus, memory_gb=slice_gb, inter_node_gb_s=inter)
    else:
        est = prepared.on(card, gpus, memory_gb=slice_gb)
    band = est.band  # tokens/s factors of the uncertainty band; NaN for sets without one (seed)
    return (
        est.tokens_per_second,
        est.hours,
        est.vram_gb,
        est.memory_gb,
        est.fits,
        est.efficiency,
        est.multi_gpu_efficiency,
        band.low if band else math.nan,
        band.high if band else math.nan,
        est.request_seconds if isinstance(est, ServingEstimate) else math.nan,
    )


def estimates_key(prepared: PreparedJob | PreparedServing) -> Hashable:
    """What the per-combination estimates of a ranking depend on (the key of the `estimates` rank is given):
    the job, but for fine-tuning not its token count, which only scales the hours (`rank` computes them
    for its own job from the tokens/s). Jobs that differ only in size, the commonest variation, then share
    the 88 card x count estimates a ranking at 200,000 offers makes (5.5 ms of its ~22 ms)."""
    return replace(prepared.job, tokens=0.0) if isinstance(prepared, PreparedJob) else prepared.job


def _estimate_combos(
    prepared: PreparedJob | PreparedServing,
    frame: OfferTable,
    idx: np.ndarray,
    cache: dict[ComboKey, tuple[Any, ...]] | None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One estimate per distinct (card, GPU count, slice memory, inter-node link) among the offers at `idx`:
    (code per offer, fields per code; NaN for codes of the table no offer at `idx` has).

    The codes are the table's (`table_combos`, built once per table), so a ranking only gathers them.
    `cache` (card, GPUs, slice GB, link) -> estimate is shared by every ranking of one job on one version."""
    all_codes, first, keys = frame.derived("rank:combos", table_combos)
    codes = all_codes[idx]
    present = np.bincount(codes, minlength=len(first)) > 0
    values: list[tuple[Any, ...]] = []
    missing = tuple(False if name == "fits" else math.nan for name in ESTIMATE_FIELDS)  # never gathered
    for code, key in enumerate(keys):
        if not present[code]:
            values.append(missing)
            continue
        est = cache.get(key) if cache is not None else None
        if est is None:
            est = _estimate(prepared, key)
            if cache is not None:
                cache[key] = est
        values.append(est)
    columns = list(zip(*values, strict=True)) if values else [() for _ in ESTIMATE_FIELDS]
    fields = {
        name: np.array(col, dtype=bool if name == "fits" else float)
        for name, col in zip(ESTIMATE_FIELDS, columns, strict=True)
    }
    if isinstance(prepared, PreparedJob):  # `cache` may hold another token count's (estimates_key): this job's
        with np.errstate(divide="ignore", invalid="ignore"):
            fields["hours"] = hours_for(prepared.job.tokens, fields["tokens_per_second"])
    return codes, fields


def card_codes(frame: OfferTable) -> np.ndarray:
    """A small integer per offer for its card: the live table's own (tracker.market.live), else the table's
    codes of `gpu_id` (a table built elsewhere)."""
    return frame["gpu_code"] if "gpu_code" in frame else frame.codes("gpu_id")[0]


def table_combos(frame: OfferTable) -> tuple[np.ndarray, np.ndarray, list[ComboKey]]:
    """Every offer's code for its (card, GPU count, slice memory, inter-node link), each code's first offer,
    and each code's key: what an estimate depends on, for the whole table."""
    every = np.arange(len(frame), dtype=np.intp)
    gpu_ids = frame["gpu_id"]
    cards = card_codes(frame)
    gpus = frame["gpu_count_f"]
    slice_gb = np.where(gpus < 1, frame["gpu_memory_gb_f"], np.nan)
    inter = fabric.inter_node_links(frame, every)  # NaN: within one node (or not said)
    codes, first = _combo_codes(cards, gpus, slice_gb, inter)
    keys: list[ComboKey] = []
    for i in first.tolist():
        mem, link = slice_gb[i], inter[i]
        keys.append(
            (
                str(gpu_ids[i]),
                float(gpus[i]),
                None if np.isnan(mem) else float(mem),
                None if np.isnan(link) else float(link),
            )
        )
    return codes, first, keys


def rank(
    frame: OfferTable,
    fresh: Mask,
    prepared: PreparedJob | PreparedServing,
    filters: RankFilters,
    options: RankOptions,
    now: datetime,
    *,
    estimates: dict[ComboKey, tuple[Any, ...]] | None = None,
    plan: RunPlan | None = None,
    terms: TermColumns | None = None,
    stale: Collection[str] = (),
) -> dict[str, Any]:
    """Rank the live offers passing `filters` for the job. Works on narrow arrays of the selected offers
    only; dicts are built for the `limit` offers returned. `estimates` optionally caches the per-combo
    estimates across calls (same job, assumptions and frame). `stale`: the rate sheets past their age,
    left out unless `filters.include_stale`; a row of one says `stale_sheet`."""
    serving = isinstance(prepared, PreparedServing)
    sort_by: SortKey = "usd_per_mtok" if serving and options.sort_by in serving_rows.RUN_KEYS else options.sort_by
    idx = np.flatnonzero(filter_mask(frame, fresh, filters, serving=serving, stale=stale))
    considered = len(idx)
    if not considered:
        return {"considered": 0, "fitting": 0, "rows": []}
    cards = card_codes(frame)[idx]
    codes, est = _estimate_combos(prepared, frame, idx, estimates)
    price_h = frame["price_per_hour_f"][idx]
    tps = est["tokens_per_second"][codes]
    hours = est["hours"][codes]
    fits = est["fits"][codes]
    with np.errstate(divide="ignore", invalid="ignore"):
        derived = {"cost_per_run": price_h * hours, "hours": hours, "usd_per_mtok": price_h / (tps * 3600.0 / 1e6)}
    uptime = None
    if isinstance(prepared, PreparedServing):
        if terms is not None:  # spot replicas serve only part of their hours (tracker.costs.serving)
            uptime = serving_rows.uptime(prepared, terms, idx, est["request_s"][codes])
        derived["usd_per_mtok"] = serving_rows.usd_per_mtok(prepared, price_h, tps if uptime is None else tps * uptime)
    totals = None
    if plan is not None and terms is not None and not options.gpu_only:
        # The whole run's cost orders the offers (tracker.costs.run), computed for the offers it can matter
        # for: `_whole_run_key` when it is the sort key, the shown rows otherwise.
        totals = _RunTotals(price_h, hours, idx, terms, plan)
    fitting = int(fits.sum())
    keep = fits | options.include_unfit
    if filters.max_hours is not None:
        keep &= hours <= filters.max_hours
    kept = np.flatnonzero(keep)
    candidates = kept
    tier = order_tiers(frame, idx, fits)
    if totals is not None and sort_by == "cost_per_run":
        derived["cost_per_run"], candidates = _whole_run_key(kept, tier, derived["cost_per_run"], totals, options)
    key = derived[sort_by]
    order = _order(frame, idx, candidates, tier, key, price_h, cards, options)
    top = order[: options.limit]
    if totals is not None and sort_by != "cost_per_run":
        derived["cost_per_run"] = np.full(len(idx), np.nan)
        derived["cost_per_run"][top] = totals.at(top)
    rows = idx[top]
    columns = {c: _column(frame[c][rows], c in _MAYBE_MISSING) for c in _OFFER_FIELDS}
    columns |= {name: values[codes[top]].tolist() for name, values in est.items() if name not in _INTERNAL_FIELDS}
    columns["reliability_f"] = _column(frame["reliability_f"][rows], True)
    columns |= {c: _column(frame[c][rows], True) for c in ("via", "upstream", "slice", *fabric.FIELDS) if c in frame}
    columns["cost_per_run"] = derived["cost_per_run"][top].tolist()
    columns["usd_per_mtok"] = derived["usd_per_mtok"][top].tolist()
    columns["last_seen"] = frame.last_seen(rows)
    columns["age_s"] = ((epoch_us(now) - frame["last_seen_us"][rows]) / 1e6).tolist()
    names = list(columns)
    out = [_row(dict(zip(names, values, strict=True))) for values in zip(*columns.values(), strict=True)]
    for r in out:  # a dated published price past its age says so in its own row
        r["stale_sheet"] = r["provider"] in stale
    if options.one_per_listing:
        _fold_counts(out, frame, idx, top, kept)
    if plan is not None and terms is not None:
        bands = (est["band_low"][codes[top]].tolist(), est["band_high"][codes[top]].tolist())
        _whole_costs(out, rows, est["hours"][codes[top]].tolist(), plan, terms, options.gpu_only, bands)
    if isinstance(prepared, PreparedServing):
        spot = None
        if uptime is not None and terms is not None:
            spot = (uptime[top].tolist(), terms.values["interruptions_per_hour"][rows].tolist())
        serving_rows.annotate(out, prepared, est["card_memory_gb"][codes[top]].tolist(), spot)
    _mark_within_band(out, sort_by)
    return {"considered": considered, "fitting": fitting, "rows": out}


def _factors(r: dict[str, Any]) -> tuple[float, float] | None:
    lo, hi, tps = r.get("tokens_per_second_low"), r.get("tokens_per_second_high"), r["tokens_per_second"]
    return None if lo is None or hi is None or not tps else (lo / tps, hi / tps)


def _mark_within_band(rows: list[dict[str, Any]], sort_by: SortKey) -> None:
    """`within_band_of_best`: the row's band of the sort key overlaps the first (best) row's band.

    Hours, cost and $ per token all scale as 1 / tokens/s, so a key's band is key / band_high ..
    key / band_low. The same card in the same count shares its model error with the best row: only
    the price differs, which is exact, so such a row is within the band only when it costs the same."""
    bands = [_factors(r) for r in rows]
    best = next((i for i, r in enumerate(rows) if r["fits"] and r[sort_by] is not None and bands[i]), None)
    for r, band in zip(rows, bands, strict=True):
        if best is None or band is None or r[sort_by] is None or not r["fits"]:
            r["within_band_of_best"] = None
            continue
        b, best_band = rows[best], bands[best]
        assert best_band is not None
        key, best_key = float(r[sort_by]), float(b[sort_by])
        if (r["gpu"], r["gpus"]) == (b["gpu"], b["gpus"]):
            r["within_band_of_best"] = key <= best_key
        else:
            r["within_band_of_best"] = key / band[1] <= best_key / best_band[0]


def _whole_costs(
    out: list[dict[str, Any]],
    rows: np.ndarray,
    hours: list[float],
    plan: RunPlan,
    terms: TermColumns,
    gpu_only: bool,
    bands: tuple[list[Any], list[Any]],
) -> None:
    """Each row's whole-run cost, by component (tracker.costs.run): `cost`, and `cost_per_run` its total
    unless `gpu_only`; `gpu_cost_per_run` is always $/hour × hours. The cost band is of the figure shown
    in `cost_per_run`: the whole run at the band's hours, unless `gpu_only` (then GPU time alone)."""
    for r, i, h, lo, hi in zip(out, rows.tolist(), hours, *bands, strict=True):
        r["gpu_cost_per_run"] = r["cost_per_run"]
        if r["cost_per_run"] is None:
            r["cost"] = None
            continue
        offer_terms = terms.terms_at(i)
        r["cost"] = run_cost(r["price_per_hour"], h, offer_terms, plan).as_dict()
        if not gpu_only:
            r["cost_per_run"] = r["cost"]["total"]
            if r["cost_per_run_low"] is not None:  # set by _band_fields only for a finite band
                r["cost_per_run_low"] = run_total(r["price_per_hour"], h / float(hi), offer_terms, plan)
                r["cost_per_run_high"] = run_total(r["price_per_hour"], h / float(lo), offer_terms, plan)


@dataclass(frozen=True, slots=True)
class _RunTotals:
    """Whole-run totals (tracker.costs.vector_totals) of offers by position in the ranking's `idx`."""

    price_h: np.ndarray
    hours: np.ndarray
    idx: np.ndarray
    terms: TermColumns
    plan: RunPlan

    def at(self, pos: np.ndarray) -> np.ndarray:
        rows = self.idx[pos]
        cols = {name: values[rows] for name, values in self.terms.values.items()}
        return vector_totals(self.price_h[pos], self.hours[pos], cols, self.plan)


def _whole_run_key(
    kept: np.ndarray,
    tier: np.ndarray,
    gpu_cost: np.ndarray,
    totals: _RunTotals,
    options: RankOptions,
) -> tuple[np.ndarray, np.ndarray]:
    """The sort key by whole-run cost, and the kept offers that can be among the first `limit` (the key is
    exact for them, +inf for the rest). GPU time alone (`gpu_cost`, $/hour x hours) never exceeds the whole
    run's total (every other component is >= 0 and the billed hours >= the training hours), so an offer whose
    GPU time already costs more than the `limit`-th best total in its tier cannot be shown. Over 200,000
    offers that leaves a few hundred to price (the term columns' gather and the totals were ~10 ms of a 30 ms
    ranking). Per card or per listing every group's best is shown, so there all are priced."""
    if options.best_per_card or options.one_per_listing or options.limit < 1 or len(kept) <= 4 * options.limit:
        key = np.full(len(tier), np.inf)
        key[kept] = totals.at(kept)
        return key, kept
    first = _candidates(kept, tier, gpu_cost, options.limit)
    first_totals = totals.at(first)
    # The `limit`-th best (tier, total) among those: no offer past it in (tier, GPU cost) can beat it.
    pick = np.lexsort((first_totals, tier[first]))[min(options.limit, len(first)) - 1]
    worst_tier, worst = tier[first][pick], first_totals[pick]
    t = tier[kept]
    need = kept[(t < worst_tier) | ((t == worst_tier) & ~(gpu_cost[kept] > worst))]  # NaN: kept, as unknown
    key = np.full(len(tier), np.inf)
    key[need] = totals.at(need)
    return key, need


def _smallest(rows: np.ndarray, key: np.ndarray, m: int) -> np.ndarray:
    """A subset of `rows` holding the `m` smallest by `key` (with every tie; NaN ranks last)."""
    if len(rows) <= m:
        return rows
    values = key[rows]
    kth = np.partition(values, m - 1)[m - 1]
    if kth != kth:  # fewer than m numbers: every row may be needed
        return rows
    smallest: np.ndarray = rows[values <= kth]
    return smallest


def _candidates(kept: np.ndarray, tier: np.ndarray, key: np.ndarray, limit: int) -> np.ndarray:
    """The kept offers that can be among the first `limit` (lower tiers first, then by key)."""
    levels = tier[kept]
    present = np.flatnonzero(np.bincount(levels, minlength=1))  # tiers are 0..3: counted, not sorted
    if len(present) == 1 and limit > 0:  # the common case: every kept offer fits, none sold out
        return _smallest(kept, key, limit)
    chosen: list[np.ndarray] = []
    for level in present:
        if limit <= 0:
            break
        rows = _smallest(kept[levels == level], key, limit)
        chosen.append(rows)
        limit -= len(rows)
    return np.concatenate(chosen) if chosen else kept[:0]


def unavailable_mask(available: np.ndarray) -> np.ndarray:
    """Offers the provider said are not available now (False; unknown is not "unavailable")."""
    # Elementwise == in C over the objects: only False equals False (None and True do not).
    out: np.ndarray = np.asarray(np.equal(available, False), dtype=bool)
    return out


def _order(
    frame: OfferTable,
    idx: np.ndarray,
    kept: np.ndarray,
    tier: np.ndarray,
    key: np.ndarray,
    price_h: np.ndarray,
    cards: np.ndarray,
    options: RankOptions,
) -> np.ndarray:
    """Positions in `idx` of the ranked offers: fitting first, then those not known to be sold out (an offer the
    provider says is unavailable is no choice today: it ranks after every available or unknown one, and says so
    in its row), then the sort key, price and id (unique, so the order is total); NaN sorts last. With
    `best_per_card` the best offer of each card; with `one_per_listing` the best of each listing (`tier`:
    `order_tiers`)."""
    if not options.best_per_card and not options.one_per_listing:  # only the first `limit` are returned
        kept = _candidates(kept, tier, key, options.limit)
    order = order_by(frame, idx, kept, tier, key, price_h)
    if options.best_per_card:
        order = order[_firsts(cards[order])]
    if options.one_per_listing:
        order = order[_firsts(listing_codes(frame, idx)[order])]
    return order


def order_tiers(frame: OfferTable, idx: np.ndarray, fits: np.ndarray) -> np.ndarray:
    """Each offer's tier, lower first: fitting before not, then not known to be sold out before sold out."""
    sold_out = frame.derived("rank:sold-out", _sold_out)[idx]  # once per table
    tier: np.ndarray = (~fits).astype(np.int8) * 2 + sold_out.astype(np.int8)
    return tier


def order_by(
    frame: OfferTable, idx: np.ndarray, kept: np.ndarray, tier: np.ndarray, key: np.ndarray, price_h: np.ndarray
) -> np.ndarray:
    """`kept` (positions in `idx`) in the ranking's order: tier, the sort key, $/hour, then the offer id
    (unique, so the order is total). The plan orders its placements by this too (tracker.plan.planner)."""
    ids = frame["id"][idx]
    order: np.ndarray = kept[np.lexsort((ids[kept], price_h[kept], key[kept], tier[kept]))]
    return order


def _firsts(codes: np.ndarray) -> np.ndarray:
    """Positions of each code's first appearance, in order."""
    if not len(codes):
        return np.zeros(0, dtype=np.intp)
    _, first = np.unique(codes, return_index=True)
    return np.sort(first)


def listing_codes(frame: OfferTable, idx: np.ndarray) -> np.ndarray:
    """One code per listing among the offers at `idx`: provider, pricing and term, and the instance type (a
    resale: its upstream, card and count, since aggregators list one machine under several names). An offer
    without an instance type is a listing of its own: nothing says two such hosts sell the same machine.

    Computed once per table, for every offer (a column of the table, so the CLI's kept table holds it too, and
    the API's is built with the table: `warm_ranking`): a ranking gathers its offers' codes."""
    codes = frame.columns.get(LISTING_COLUMN)
    if codes is None:
        codes = frame.columns[LISTING_COLUMN] = _listings(frame)
    picked: np.ndarray = codes[idx]
    return picked


LISTING_COLUMN = "listing_code"
_RADIX_LIMIT = 1 << 62


def _listings(frame: OfferTable) -> np.ndarray:
    """`listing_codes` of the whole table: each part is the table's codes of a column (`OfferTable.codes`,
    shared with the filters), the parts combined into one integer, not one string per offer."""
    n = len(frame)

    def codes(name: str) -> np.ndarray:
        return frame.codes(name)[0] if name in frame else np.zeros(n, dtype=np.intp)

    def named(name: str) -> tuple[np.ndarray, np.ndarray]:
        """Codes, and whether each offer's value is a non-empty string (decided once per distinct value)."""
        if name not in frame:
            return np.zeros(n, dtype=np.intp), np.zeros(n, dtype=bool)
        found, distinct = frame.codes(name)
        nonempty = np.array([isinstance(v, str) and bool(v) for v in distinct], dtype=bool)
        return found, nonempty[found] if n else np.zeros(0, dtype=bool)

    upstream, resale = named("upstream")
    instance, typed = named("instance_type")
    ids = frame["id"].astype(np.int64)
    machine_kind = np.where(resale, 0, np.where(typed, 1, 2))
    machine = np.where(resale, upstream, np.where(typed, instance, ids - (ids.min() if n else 0)))
    card = np.where(resale, card_codes(frame), 0)
    count = np.where(resale, codes("gpu_count_f"), 0)
    parts = (codes("provider"), codes("pricing"), codes("reserved_term"), machine_kind, machine, card, count)
    return _combine(parts, n)


def _combine(parts: Sequence[np.ndarray], n: int) -> np.ndarray:
    """One integer per distinct tuple of the parts' codes (mixed radix, compacted before it could overflow)."""
    key = np.zeros(n, dtype=np.int64)
    for part in parts:
        radix = int(part.max()) + 1 if n else 1
        if (int(key.max()) + 1 if n else 1) * radix >= _RADIX_LIMIT:
            key = np.unique(key, return_inverse=True)[1].astype(np.int64)
        key = key * radix + part.astype(np.int64)
    combined: np.ndarray = np.unique(key, return_inverse=True)[1].reshape(-1)
    return combined


def warm_listings(session: object, version: int, frame: OfferTable) -> list[tuple[object, object]]:
    """A `tracker.market.live` warmer: the listing codes built with the table, off the request path (a
    column of the table: the CLI keeps them with it)."""
    listing_codes(frame, np.zeros(0, dtype=np.intp))
    return []


def warm_ranking(session: object, version: int, frame: OfferTable) -> list[tuple[object, object]]:
    """A `tracker.market.live` warmer: everything a ranking gathers from the whole table (listing codes,
    estimate combinations, sold-out tiers, the default filters' codes), built before readers see it."""
    warm_listings(session, version, frame)
    frame.derived("rank:combos", table_combos)
    frame.derived("rank:sold-out", _sold_out)
    warm_filters(frame)
    return []


def _sold_out(frame: OfferTable) -> np.ndarray:
    return unavailable_mask(frame["available"])


def _fold_counts(
    out: list[dict[str, Any]], frame: OfferTable, idx: np.ndarray, top: np.ndarray, kept: np.ndarray
) -> None:
    """Each listing row's folded offers: how many, and the other regions it is offered in (best first)."""
    codes = listing_codes(frame, idx)
    regions = frame["region"][idx]
    # Only the listings shown: the others' members are never looked at.
    kept = kept[np.isin(codes[kept], codes[top])]
    ranked = kept[np.lexsort((frame["price_per_hour_f"][idx][kept],))]
    members: dict[int, list[Any]] = {}
    for position in ranked.tolist():
        members.setdefault(int(codes[position]), []).append(regions[position])
    for row, position in zip(out, top.tolist(), strict=True):
        group = members.get(int(codes[position]), [])
        shown = row["region"]
        row["listings"] = len(group)
        row["other_regions"] = list(dict.fromkeys(r for r in group if isinstance(r, str) and r and r != shown))


_OFFER_FIELDS = (
    "id",
    "provider",
    "reference",
    "demo",
    "offer_key",
    "gpu_id",
    "gpu_family",
    "gpu_count_f",
    "pricing",
    "reserved_term",
    "region",
    "instance_type",
    "available",
    "verification",
    "hosting",
    "cloud",
    "price_per_hour",
    "price_per_gpu_hour",
)
# Optional offer fields: a missing value (None in the database, NaN in a string column) is JSON null.
_MAYBE_MISSING = {
    "provider",
    "offer_key",
    "gpu_id",
    "gpu_family",
    "pricing",
    "reserved_term",
    "region",
    "instance_type",
    "available",
    "verification",
    "hosting",
    "cloud",
    "price_per_hour",
    "price_per_gpu_hour",
}


def _column(values: np.ndarray, maybe_missing: bool) -> list[Any]:
    """Python values (numpy scalars unwrapped); NaN as None where a value may be missing."""
    out: list[Any] = values.tolist()
    if maybe_missing:
        out = [None if v is None or v != v else v for v in out]
    return out


def _band_fields(r: dict[str, Any], price: Any, hours: float, tps: float, priced: bool) -> dict[str, Any]:
    """The estimate's uncertainty band (tracker.estimate.uncertainty) carried to the offer."""
    lo, hi = (math.nan if r.get(k) is None else float(r[k]) for k in ("band_low", "band_high"))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return {
            "tokens_per_second_low": None,
            "tokens_per_second_high": None,
            "hours_low": None,
            "hours_high": None,
            "cost_per_run_low": None,
            "cost_per_run_high": None,
        }
    h_lo, h_hi = hours / hi, hours / lo
    return {
        "tokens_per_second_low": round(tps * lo, 1),
        "tokens_per_second_high": round(tps * hi, 1),
        "hours_low": round(h_lo, 3),
        "hours_high": round(h_hi, 3),
        "cost_per_run_low": money.cost(price, h_lo) if priced else None,
        "cost_per_run_high": money.cost(price, h_hi) if priced else None,
    }


def _row(r: dict[str, Any]) -> dict[str, Any]:
    fits = bool(r["fits"])
    price, hours, tps = r["price_per_hour"], float(r["hours"]), float(r["tokens_per_second"])
    priced = price is not None and math.isfinite(hours) and tps > 0
    return {
        "offer_id": int(r["id"]),
        "provider": r["provider"],
        "reference": bool(r["reference"]),
        "demo": bool(r["demo"]),
        "offer_key": r["offer_key"],
        "gpu": r["gpu_id"],
        "gpu_family": r["gpu_family"],
        "gpus": float(r["gpu_count_f"]),
        "slice": r.get("slice"),  # a MIG slice's profile: `gpus` is its share of the card
        "pricing": r["pricing"],
        "reserved_term": r["reserved_term"],
        "region": r["region"],
        "instance_type": r["instance_type"],
        "available": r["available"],
        "unavailable": r["available"] is False,  # ranked after every offer not known to be sold out
        "via": r.get("via"),  # the aggregator a resale reaches us through (tracker.market.aggregated)
        "upstream": r.get("upstream"),
        "fabric": fabric.row_fabric(r),  # interconnect and cluster shape, where the offer says them
        # Effective quality (stated, or vouched for by the provider's kind: tracker.market.quality).
        "verification": r["verification"],
        "hosting": r["hosting"],
        "cloud": r["cloud"],
        "reliability": r["reliability_f"],
        "price_per_hour": r["price_per_hour"],
        "price_per_gpu_hour": r["price_per_gpu_hour"],
        "fits": fits,
        "reason": None if fits else f"needs {r['vram_gb']:.1f} GB per GPU, the card has {r['card_memory_gb']:.0f} GB",
        "vram_gb": round(float(r["vram_gb"]), 2),
        "tokens_per_second": round(float(r["tokens_per_second"]), 1),
        "hours": round(float(r["hours"]), 3),
        # From the offer's exact price and the estimate, by the one money rule (the float `derived`
        # figures only order the offers).
        "cost_per_run": money.cost(price, hours) if priced else None,
        "usd_per_mtok": money.per_million_tokens(price, tps) if priced else None,
        "efficiency": round(float(r["efficiency"]), 4),
        "multi_gpu_efficiency": round(float(r["multi_gpu_efficiency"]), 4),
        **_band_fields(r, price, hours, tps, priced),
        "last_seen": r["last_seen"],
        "price_age_s": round(float(r["age_s"]), 1),
    }
