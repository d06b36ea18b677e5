"""Offers that reach us through an aggregator: the one place that says how they count.

An aggregator (Prime Intellect, Shadeform, Spheron, …) resells other providers' machines. Its offers
carry `via` (the aggregator) and `upstream` (whose machine it is) in `offers.attributes`, set once for
every adapter by `providers.fetching.labelled_aggregated`. The same machine may therefore be listed
directly by its provider and again by one or more resellers, each with its own markup.

Users choose (`aggregated=`, on offers, the market and rankings):

* `include` (the default): every offer counts, resold or not — the market as listed;
* `exclude`: only direct offers (gpuprice.fyi's choice for its index: a resale is not a new price);
* `dedupe`: each machine counts once. A machine is (owner, card, GPU count, pricing type, reservation
  term), the owner being the upstream of a resold offer and the provider of a direct one. When the
  owner lists the machine directly among the offers considered, its direct offers count and every
  resale of it is dropped (direct price preferred); otherwise the cheapest resale counts (lowest
  $/GPU-hour, then lowest id) and the other resales of it are dropped. Regions are not part of the
  machine: aggregators name them their own way, so they cannot be matched to the owner's.

Dedupe is relative to the offers a request already selected (filters, freshness): if the direct offer is
filtered out (another provider asked for, stale), the resale stands in for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np
from sqlalchemy import ColumnElement, and_, exists, or_, select
from sqlalchemy.orm import aliased

from tracker.storage.sql import json_text
from tracker.storage.tables import Offer

if TYPE_CHECKING:
    import numpy.typing as npt

    Mask: TypeAlias = npt.NDArray[np.bool_]

Mode = Literal["include", "exclude", "dedupe"]
MODES: tuple[Mode, ...] = ("include", "exclude", "dedupe")

__all__ = ["MODES", "Mode", "check", "columns", "conditions", "dedupe", "mask"]


def check(mode: str) -> None:
    """ValueError naming the choices when `mode` is not one of them."""
    if mode not in MODES:
        raise ValueError(f"aggregated must be one of {', '.join(MODES)}, got {mode!r}")


def columns() -> dict[str, ColumnElement[Any]]:
    """`via` and `upstream` of each offer, for the live table (None for a direct offer)."""
    return {"via": json_text(Offer.attributes, "via"), "upstream": json_text(Offer.attributes, "upstream")}


def conditions(mode: str) -> list[ColumnElement[bool]]:
    """The choice as SQL conditions on listed `offers` (for queries that filter in the database). The
    offer list has no freshness cut, so here a machine's direct offer or cheaper resale is looked for among
    every listed offer, not only those the other filters keep."""
    check(mode)
    via = json_text(Offer.attributes, "via")
    if mode == "exclude":
        return [via.is_(None)]
    if mode == "include":
        return []
    other = aliased(Offer)
    same_machine = and_(
        other.delisted_at.is_(None),
        other.id != Offer.id,
        other.gpu_id == Offer.gpu_id,
        other.gpu_count == Offer.gpu_count,
        other.pricing == Offer.pricing,
        or_(
            other.reserved_term == Offer.reserved_term,
            and_(other.reserved_term.is_(None), Offer.reserved_term.is_(None)),
        ),
    )
    upstream = json_text(Offer.attributes, "upstream")
    direct = exists(
        select(other.id).where(same_machine, other.provider == upstream, json_text(other.attributes, "via").is_(None))
    )
    cheaper_resale = exists(
        select(other.id).where(
            same_machine,
            json_text(other.attributes, "via").is_not(None),
            json_text(other.attributes, "upstream") == upstream,
            or_(
                other.price_per_gpu_hour < Offer.price_per_gpu_hour,
                and_(other.price_per_gpu_hour == Offer.price_per_gpu_hour, other.id < Offer.id),
            ),
        )
    )
    return [or_(via.is_(None), and_(~direct, ~cheaper_resale))]


def dedupe(
    selected: Mask,
    *,
    provider: Sequence[Any],
    via: Sequence[Any],
    upstream: Sequence[Any],
    gpu_id: Sequence[Any],
    gpu_count: Sequence[Any],
    pricing: Sequence[Any],
    reserved_term: Sequence[Any],
    price_per_gpu_hour: Sequence[Any],
    ids: Sequence[Any],
) -> Mask:
    """`selected` less the resales the `dedupe` rule drops (arrays are columns of one table)."""
    rows = np.flatnonzero(selected)
    direct: set[tuple[Any, ...]] = set()
    best: dict[tuple[Any, ...], tuple[float, int, int]] = {}  # machine → (price, id, row) of its cheapest resale
    for i in rows.tolist():
        term = reserved_term[i] if isinstance(reserved_term[i], str) else None
        machine_of = (gpu_id[i], float(gpu_count[i]), pricing[i], term)
        if not _stated(via[i]):
            direct.add((provider[i], *machine_of))
            continue
        key = (upstream[i], *machine_of)
        candidate = (float(price_per_gpu_hour[i]), int(ids[i]), i)
        if key not in best or candidate < best[key]:
            best[key] = candidate
    keep = selected.copy()
    for i in rows.tolist():
        if not _stated(via[i]):
            continue
        term = reserved_term[i] if isinstance(reserved_term[i], str) else None
        key = (upstream[i], gpu_id[i], float(gpu_count[i]), pricing[i], term)
        if key in direct or best[key][2] != i:
            keep[i] = False
    return keep


def _stated(value: Any) -> bool:
    """A `via` that names an aggregator (None, NaN and "" do not)."""
    return isinstance(value, str) and bool(value)


def mask(table: Any, selected: Mask, mode: str) -> Mask:
    """The choice applied over the live table's columns (`tracker.market.live.OfferTable` or its pandas
    frame), to the offers already `selected`."""
    check(mode)
    if mode == "include" or not len(selected):
        return selected
    via = _values(table, "via")
    if mode == "exclude":
        direct: Mask = selected & ~np.fromiter((_stated(v) for v in via), dtype=bool, count=len(via))
        return direct
    return dedupe(
        selected,
        provider=_values(table, "provider"),
        via=via,
        upstream=_values(table, "upstream"),
        gpu_id=_values(table, "gpu_id"),
        gpu_count=_values(table, "gpu_count_f"),
        pricing=_values(table, "pricing"),
        reserved_term=_values(table, "reserved_term"),
        price_per_gpu_hour=_values(table, "price_per_gpu_hour_f"),
        ids=_values(table, "id"),
    )


def _values(table: Any, name: str) -> Any:
    column = table[name]
    return column.to_numpy() if hasattr(column, "to_numpy") else column
