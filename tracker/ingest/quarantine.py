"""Batch-level checks: a batch that looks broken is quarantined and must not overwrite good prices.

Every check compares the batch with the last *good* run: the latest `ok` run's offer count, and the
prices of the offers still listed, which are exactly that run's prices (a quarantined or failed run
changes no offer, and an `ok` run delists whatever it did not list).

Count (issue #18: Lambda's empty, ×1000 and half-sized batches ran `ok` and delisted 16, 16 and 7 offers):
* **empty**: no valid offer where the last good run had any → quarantine, whatever the provider's size.
  Offers that truly all vanished look the same as an outage or a changed API; keeping the last good
  prices is safe because they go stale (`stale_after`) and the provider's failing run raises alerts.
* **collapse**: fewer valid offers than `quarantine_collapse_ratio` (½) of the last good run. From
  `quarantine_min_previous` (20) offers a drop below half alone is enough. Below that, one or two offers
  coming and going is normal on a small provider, so the drop must also lose at least
  `quarantine_min_lost` (3) offers: 16 → 7 is quarantined, 4 → 1 and 5 → 2 are, but 3 → 1 and 2 → 1
  are accepted (and delist what is gone), and 1 → 0 or 2 → 0 are caught as empty.

Price level (issue #18: Vast ×100 and ×10 were accepted, 18,711 prices rewritten): per card (GPU id ×
pricing type) the median of new ÷ previous price per GPU-hour over the offers present in both runs.
A card with no offer in common (keys changed) falls back to the ratio of its median prices. A card has
*jumped* when that median moved by `quarantine_price_ratio` (×3) or more either way; the batch is
quarantined when more than `quarantine_price_share` (½) of the compared cards jumped the same way.
* Why medians per card: a few offers changing a lot (a host tripling one listing) do not move a card's
  median, and a card whose every offer moved does not outvote the other cards.
* Why ×3: genuine market moves between two scrapes are well inside it (a whole market moving 20–30 %
  is ×1.3, a tenth of the way in log terms), while the scaling bugs seen are ×8 or more (cents ×100,
  per-minute ×60, thousandths ×1000, per-box vs per-GPU ×8) or their inverses.
* A provider's first run (nothing listed) has no level to compare with: only the other checks apply.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from decimal import Decimal
from statistics import median
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.config import Settings
from tracker.storage.tables import ScrapeRun

if TYPE_CHECKING:
    from tracker.ingest.batch import Prepared

Card = tuple[str, str]  # (gpu_id, pricing)


class StoredOffer(Protocol):
    """The columns of a stored offer the price-level check reads (a row of ingest's diff query)."""

    @property
    def gpu_id(self) -> str: ...
    @property
    def pricing(self) -> str: ...
    @property
    def gpu_count(self) -> Decimal: ...
    @property
    def price_per_hour(self) -> Decimal: ...
    @property
    def delisted(self) -> bool: ...


def last_good_count(session: Session, provider: str) -> int | None:
    """Valid offers in the provider's latest `ok` run; None before its first one."""
    return session.scalar(
        select(ScrapeRun.offers_valid)
        .where(ScrapeRun.provider == provider, ScrapeRun.status == "ok")
        .order_by(ScrapeRun.started_at.desc(), ScrapeRun.id.desc())
        .limit(1)
    )


def quarantine_reason(
    session: Session,
    provider: str,
    prepared: Prepared,
    settings: Settings,
    stored: Mapping[str, StoredOffer] | None = None,
) -> str | None:
    """Why this batch must not be applied, or None. `stored` is the provider's offers by key (listed and
    delisted, as ingest reads them for its diff); without it the price level is not checked."""
    valid = prepared.valid
    unknown = sum(prepared.unknown_counts.values())
    set_aside = len(prepared.invalid) + unknown
    if reason := count_reason(last_good_count(session, provider), len(valid), set_aside, settings):
        return reason
    if len(valid) >= 5 and len({v.price_per_gpu_hour for v in valid}) == 1:
        return f"all {len(valid)} offers have the identical price ${valid[0].price_per_gpu_hour}/GPU-hour"
    total = len(valid) + unknown
    if total >= 10 and unknown > total / 2:
        return f"{unknown} of {total} offers have unknown GPU names"
    if stored:
        return price_level_reason(prepared, stored, settings)
    return None


def count_reason(previous: int | None, valid: int, set_aside: int, settings: Settings) -> str | None:
    """The empty and collapse rules (see the module docstring). `set_aside`: offers dropped as invalid
    or with unknown GPU names, named in the reason because they tell a parser bug from a quiet market."""
    if not previous:  # first run, or the last good run listed nothing: no count to fall from
        return None
    aside = f" ({set_aside} set aside as invalid or unknown)" if set_aside else ""
    if valid == 0:
        return f"empty batch: no valid offers{aside} where the last good run had {previous}; prices kept"
    lost = previous - valid
    if valid < previous * settings.quarantine_collapse_ratio and (
        previous >= settings.quarantine_min_previous or lost >= settings.quarantine_min_lost
    ):
        return (
            f"offer count collapsed from {previous} to {valid} valid offers{aside} "
            f"(below {settings.quarantine_collapse_ratio:.0%} of the last good run); prices kept"
        )
    return None


def price_level_reason(prepared: Prepared, stored: Mapping[str, StoredOffer], settings: Settings) -> str | None:
    """The price-level rule (see the module docstring)."""
    ratios = card_ratios(prepared, stored)
    if not ratios:
        return None
    jump = settings.quarantine_price_ratio
    up = [r for r in ratios.values() if r >= jump]
    down = [r for r in ratios.values() if r <= 1 / jump]
    for jumped in (up, down):
        if len(jumped) > settings.quarantine_price_share * len(ratios):
            return (
                f"price level {_times(median(jumped))} against the last good run on {len(jumped)} of "
                f"{len(ratios)} cards (median ratio per card); prices kept"
            )
    return None


def card_ratios(prepared: Prepared, stored: Mapping[str, StoredOffer]) -> dict[Card, float]:
    """Per card: the median new ÷ previous price per GPU-hour over offers listed in both runs, or, for a
    card with none in common, its median new price ÷ its median previous price."""
    matched: dict[Card, list[float]] = defaultdict(list)
    unmatched: dict[Card, list[float]] = defaultdict(list)
    for v in prepared.valid:
        card = (v.gpu.id, v.scraped.pricing.value)
        row = stored.get(v.scraped.key)
        if row is None or row.delisted:  # a delisted offer's price is older than the last good run
            unmatched[card].append(float(v.price_per_gpu_hour))
        elif row.price_per_hour == v.price_per_hour and row.gpu_count == v.scraped.gpu_count:
            matched[card].append(1.0)  # the common case, without the arithmetic
        else:
            before = float(row.price_per_hour) / float(row.gpu_count)
            matched[card].append(float(v.price_per_gpu_hour) / before)
    out = {card: median(values) for card, values in matched.items()}
    open_cards = unmatched.keys() - out.keys()
    if open_cards:
        previous: dict[Card, list[float]] = defaultdict(list)
        for row in stored.values():
            card = (row.gpu_id, row.pricing)
            if card in open_cards and not row.delisted:
                previous[card].append(float(row.price_per_hour) / float(row.gpu_count))
        for card, prices in previous.items():
            out[card] = median(unmatched[card]) / median(prices)
    return out


def _times(ratio: float) -> str:
    # ×100.0 and ×10.0 read as factors; below 1 two significant digits keep ×0.01 from reading ×0.0.
    return f"×{ratio:.1f}" if ratio >= 1 else f"×{ratio:.2g}"
