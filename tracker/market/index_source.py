"""The price index's inputs read from the database, and the baskets a query names.

The same rows an export holds (tracker.history.index_export reads those): the offers of the basket's
cards, their price rows overlapping the window, and their providers' successful observations before its
end (what the outage rule reads: the whole history, so a day's value does not depend on how far back a
query starts). The methodology is tracker.market.index.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta

import numpy as np
from sqlalchemy import Float, cast, or_, select
from sqlalchemy.orm import Session

from tracker.catalog.gpus import get_catalog
from tracker.config import Settings
from tracker.market.data_terms import may_republish
from tracker.market.index import (
    AREAS,
    CURRENT,
    IndexHistory,
    IndexOffer,
    IndexValue,
    PriceColumns,
    compute,
    method,
)
from tracker.market.table import positions
from tracker.storage.sql import read_columns, read_columns_by
from tracker.storage.tables import Offer, OfferPrice, ScrapeRun

__all__ = ["CSV_COLUMNS", "MAX_DAYS", "Basket", "baskets", "index_csv", "index_values", "load_history"]

Basket = tuple[str, list[str]]  # (label, card ids)


def baskets(card: str | None) -> list[Basket]:
    """What to index: every card family, or the one a query names (its family when it names a whole
    family, else the cards it resolves to, labelled by them). Raises GpuNameError for an unknown name."""
    catalog = get_catalog()
    families: dict[str, list[str]] = {}
    for spec in catalog.all():
        families.setdefault(spec.family, []).append(spec.id)
    if card is None:
        return sorted(families.items())
    ids = sorted(g.id for g in catalog.resolve(card))
    fams = {catalog.family_of(i) for i in ids}
    if len(fams) == 1 and sorted(families[next(iter(fams))]) == ids:
        return [(next(iter(fams)), ids)]
    return [(" + ".join(ids), ids)]


def _midnight(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def load_history(session: Session, gpu_ids: Sequence[str], start: date, end: date, settings: Settings) -> IndexHistory:
    lo, hi = _midnight(start), _midnight(end)
    offer_rows = session.execute(
        select(
            Offer.id,
            Offer.provider,
            Offer.offer_key,
            Offer.gpu_id,
            Offer.gpu_family,
            Offer.gpu_count,
            Offer.pricing,
            Offer.reserved_term,
            Offer.region,
            Offer.attributes,
            Offer.last_seen,
            Offer.price_kind,
            Offer.orderable,
        ).where(Offer.gpu_id.in_(list(gpu_ids)))
    ).all()
    republish = {p: may_republish(p, settings) for p in {r[1] for r in offer_rows}}
    offers = [
        IndexOffer(
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[6],
            r[7],
            r[8],
            r[9] or {},
            r[10],
            r[11] or "asking",
            r[12] is not False,
            republish[r[1]],
        )
        for r in offer_rows
    ]
    # The price rows straight into arrays (tracker.storage.sql.read_columns: no Python object per value;
    # prices as the nearest double, as market history reads them). Each row names its offer by id, mapped
    # here to the offer's position, so offers are not joined in.
    offer_id, valid_from, valid_to, price = read_columns(
        session,
        select(
            OfferPrice.offer_id, OfferPrice.valid_from, OfferPrice.valid_to, cast(OfferPrice.price_per_gpu_hour, Float)
        ).where(
            OfferPrice.gpu_id.in_(list(gpu_ids)),
            OfferPrice.valid_from < hi,
            or_(OfferPrice.valid_to.is_(None), OfferPrice.valid_to > lo),
        ),
        ("int", "instant", "instant", "float"),
    )
    # A row whose offer is not among the card's offers (listed as another card since) is not its history.
    found, known = positions(np.array([r[0] for r in offer_rows], dtype=np.int64), offer_id)
    prices = PriceColumns(found[known], valid_from[known], valid_to[known], price[known])
    providers = sorted({o.provider for o in offers})
    seen = read_columns_by(
        session,
        select(ScrapeRun.provider, ScrapeRun.observed_at).where(
            ScrapeRun.provider.in_(providers),
            ScrapeRun.status == "ok",
            ScrapeRun.observed_at.is_not(None),
            ScrapeRun.observed_at < hi,
        ),
        ("instant",),
    )
    observations = {p: at.tolist() for p, (at,) in seen.items()}
    return IndexHistory(offers, prices, observations)


MAX_DAYS = 3660


def index_values(
    session: Session,
    settings: Settings,
    now: datetime,
    *,
    card: str | None = None,
    days: int = 30,
    areas: Sequence[str] = AREAS,
    version: str = CURRENT,
) -> list[IndexValue]:
    """The index of the last `days` complete UTC days before `now`, per basket (every family, or `card`'s)
    and area. ValueError (naming the input) on a bad days, area or version; GpuNameError on an unknown card."""
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"days must be between 1 and {MAX_DAYS}, got {days}")
    method(version)
    for area in areas:
        if area not in AREAS:
            raise ValueError(f"area must be one of {', '.join(AREAS)}, got {area!r}")
    end = now.astimezone(UTC).date()
    start = end - timedelta(days=days)
    out: list[IndexValue] = []
    for label, ids in baskets(card):
        history = load_history(session, ids, start, end, settings)
        if not history.offers and card is None:
            continue  # a family nobody lists is left out of the all-families answer
        out.extend(
            compute(
                history,
                gpu_ids=ids,
                basket=label,
                start=start,
                end=end,
                settings=settings,
                version=version,
                areas=areas,
            )
        )
    out.sort(key=lambda v: (v.basket, v.day, AREAS.index(v.area)))
    return out


CSV_COLUMNS = ("version", "basket", "area", "day", "value", "p25", "p75", "spread", "offers", "providers", "reason")


def index_csv(values: Sequence[IndexValue]) -> str:
    """The values as CSV (the CLI's --format csv and the API's format=csv): one row per basket, area and
    day; `providers` lists provider:offers:weight, separated by spaces."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for v in values:
        used = " ".join(f"{p}:{n}:{w}" for p, n, w in v.providers)
        cells = (v.version, v.basket, v.area, v.day.isoformat(), v.value, v.p25, v.p75, v.spread, v.offers, used)
        writer.writerow(["" if c is None else c for c in (*cells, v.reason)])
    return out.getvalue()
