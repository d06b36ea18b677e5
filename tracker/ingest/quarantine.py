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
* Why ×3: genuine moves between two scrapes are well inside it (a whole market moving 20–30 % is
  ×1.2–1.3, a quarter of the way to ×3 in log terms), while the scaling bugs seen are ×8 or more (cents
  ×100, per-minute ×60, thousandths ×1000, an 8-GPU box's price read per GPU) or their inverses. A ×2
  bug (a 2-GPU box read per GPU) is indistinguishable from a real doubling and is not caught.
* Why "more than half of the cards, the same way": a scaling bug moves every card together, while a
  genuine move of a few cards (one card of 17 tripling) leaves the batch applied.
* A provider's first run (nothing listed) has no level to compare with: only the other checks apply.
* A genuine whole-provider repricing beyond ×3 stays quarantined run after run (the reference never
  moves): an operator accepts it by raising `TRACKER_QUARANTINE_PRICE_RATIO` for one run.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from statistics import median
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.config import Settings
from tracker.storage.ledger import RunStatus
from tracker.storage.tables import Offer, ScrapeRun

if TYPE_CHECKING:
    from tracker.ingest.validate import Prepared, ValidOffer

Card = tuple[str, str]  # (gpu_id, pricing)


class StoredOffer(Protocol):
    """The columns of a stored offer the price-level check reads (a row of ingest's diff query)."""

    @property
    def gpu_count(self) -> Decimal: ...
    @property
    def price_per_hour(self) -> Decimal: ...


def last_good_count(session: Session, provider: str) -> int | None:
    """Valid offers in the provider's latest `ok` run; None before its first one."""
    return session.scalar(
        select(ScrapeRun.offers_valid)
        .where(ScrapeRun.provider == provider, ScrapeRun.status == RunStatus.ok)
        .order_by(ScrapeRun.started_at.desc(), ScrapeRun.id.desc())
        .limit(1)
    )


def quarantine_reason(session: Session, provider: str, prepared: Prepared, settings: Settings) -> str | None:
    """Why this batch must not be applied, or None: the checks that need no diff (count, identical prices,
    unknown names). The price level is checked on the diff's sample (`price_level_reason`)."""
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
            f"offer count collapsed from {previous} to {valid} valid offer{'' if valid == 1 else 's'}, below "
            f"{settings.quarantine_collapse_ratio:.0%} of the last good run{aside}; prices kept"
        )
    return None


@dataclass(slots=True)
class PriceLevel:
    """The price-level check's sample of a batch, filled by ingest's diff in its one pass over the offers
    (a separate pass cost about a tenth of a 20,000-offer ingest). Prices are per GPU-hour, by card."""

    same: Counter[Card] = field(default_factory=Counter)  # listed in the last good run, price unchanged
    moved: defaultdict[Card, list[float]] = field(default_factory=lambda: defaultdict(list))  # new ÷ previous
    fresh: defaultdict[Card, list[float]] = field(default_factory=lambda: defaultdict(list))  # not listed before

    def add_moved(self, card: Card, v: ValidOffer, previous: StoredOffer) -> None:
        before = float(previous.price_per_hour) / float(previous.gpu_count)
        self.moved[card].append(float(v.price_per_gpu_hour) / before)

    def card_ratios(self, session: Session, provider: str) -> dict[Card, float]:
        """Per card: the median new ÷ previous price over offers listed in both runs, or, for a card with
        none in common (its keys all changed), its median new price ÷ its median listed price."""
        out = {card: _median_with_ones(self.moved.get(card, []), ones) for card, ones in self.same.items()}
        out.update((card, median(ratios)) for card, ratios in self.moved.items() if card not in out)
        if open_cards := self.fresh.keys() - out.keys():
            listed: defaultdict[Card, list[float]] = defaultdict(list)
            rows = session.execute(
                select(Offer.gpu_id, Offer.pricing, Offer.price_per_hour, Offer.gpu_count).where(
                    Offer.provider == provider,
                    Offer.delisted_at.is_(None),
                    Offer.gpu_id.in_(sorted({gpu for gpu, _ in open_cards})),
                )
            )
            for gpu_id, pricing, price, count in rows:
                if (gpu_id, pricing) in open_cards:
                    listed[(gpu_id, pricing)].append(float(price) / float(count))
            out.update((card, median(self.fresh[card]) / median(prices)) for card, prices in listed.items())
        return out


def price_level_reason(session: Session, provider: str, level: PriceLevel, settings: Settings) -> str | None:
    """The price-level rule (see the module docstring)."""
    if not level.moved and not level.fresh:  # nothing priced differently: the usual unchanged scrape
        return None
    ratios = level.card_ratios(session, provider)
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


def _median_with_ones(ratios: list[float], ones: int) -> float:
    """The median of `ratios` plus `ones` ratios of exactly 1.0 (unchanged prices), without listing them."""
    below = sorted(r for r in ratios if r < 1.0)
    above = sorted(r for r in ratios if r >= 1.0)
    n = len(below) + ones + len(above)

    def at(i: int) -> float:
        if i < len(below):
            return below[i]
        return 1.0 if i < len(below) + ones else above[i - len(below) - ones]

    return at(n // 2) if n % 2 else (at(n // 2 - 1) + at(n // 2)) / 2


def _times(ratio: float) -> str:
    # ×100.0 and ×10.0 read as factors; below 1 two significant digits keep ×0.01 from reading ×0.0.
    return f"×{ratio:.1f}" if ratio >= 1 else f"×{ratio:.2g}"
