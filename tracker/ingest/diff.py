"""Diff: what one validated batch changes against its provider's stored offers. Pure: no database.

The rules of change-only history, all decided here (`tracker.ingest.apply` only writes them):

* An offer not stored before is new: an offer row, a price row and an availability row.
* A stored offer whose quote (amount or currency), GPU count or card changed gets a `change_kind="price"`
  row: history is read per GPU-hour and per card, so the same instance price over another GPU count, or
  the same offer resolved to another card, is a new price row too. So does one whose price kind or
  orderability changed (a server rented, then free again): an asking and a rented rate are not one price.
* The same quote whose USD figure differs (only the exchange rate moved) gets a `change_kind="fx"` row,
  counted apart so FX moves never pose as price changes.
* A price or availability row that gets a successor has its open row closed, so at most one row per
  offer is open.
* Availability is change-only too: a row when the `available` flag changes.
* A delisted offer that is listed again reopens: a price row and an availability row (its old rows
  were closed when it was delisted), counted in `reopened`.
* A stored, listed offer absent from the batch is gone: delisted, its open rows closed.
* The stored description is rewritten when anything the read side filters on changed (availability,
  card, GPU count, region, demo flag, the quality attributes) or the price did; other attributes may lag.
* An offer whose observation digest (`tracker.ingest.digest`) changed is rewritten too, so its row holds
  the digest of what it was written from; one validation took as stored (`same_as`) is the same price.
* Anything else (the same batch again) changes nothing but `last_seen`.

The diff also fills the price-level sample (`tracker.ingest.quarantine.PriceLevel`) in the same pass.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, Protocol

from tracker.ingest.quarantine import PriceLevel
from tracker.ingest.validate import KnownOffer, ValidOffer
from tracker.storage.tables import QUALITY_ATTRIBUTES


class ChangeKind(StrEnum):
    """Why a price row exists (stored in `offer_prices.change_kind`)."""

    price = "price"  # listed, reopened, or the quote, GPU count or card changed
    fx = "fx"  # the same quote, another USD figure: only the exchange rate moved


class ListedOffer(KnownOffer, Protocol):
    """A stored offer as the diff compares it (a row of `tracker.ingest.apply.read_listed`): what ingest
    first reads of every listed offer (`KnownOffer`), and the columns compared."""

    @property
    def currency(self) -> str | None: ...
    @property
    def price_native_per_hour(self) -> Decimal | None: ...  # None: written before native amounts were kept
    @property
    def available(self) -> bool | None: ...
    @property
    def gpu_count(self) -> Decimal: ...
    @property
    def region(self) -> str: ...
    @property
    def demo(self) -> bool: ...
    @property
    def price_kind(self) -> str: ...
    @property
    def orderable(self) -> bool: ...
    @property
    def quality(self) -> str | None: ...  # the quality attributes, one JSON array in QUALITY_ATTRIBUTES' order


@dataclass(slots=True)
class Changes:
    """What applying a batch writes. Stored offers are named by id; every list keeps the batch's order."""

    new: list[ValidOffer] = field(default_factory=list)  # offer, price and availability row each
    rewritten: list[tuple[int, ValidOffer]] = field(default_factory=list)  # offer row rewritten, relisted
    prices: list[tuple[int, ValidOffer, ChangeKind]] = field(default_factory=list)  # a new price row
    availability: list[tuple[int, ValidOffer]] = field(default_factory=list)  # a new availability row
    close_prices: list[int] = field(default_factory=list)  # open price row superseded
    close_availability: list[int] = field(default_factory=list)  # open availability row superseded
    gone: list[int] = field(default_factory=list)  # listed, absent now: delisted, open rows closed
    reopened: int = 0  # delisted offers listed again
    level: PriceLevel = field(default_factory=PriceLevel)  # the price-level check's sample

    @property
    def price_rows(self) -> int:
        """Price changes (`change_kind` "price"), new and reopened offers included."""
        return len(self.new) + sum(kind == ChangeKind.price for _, _, kind in self.prices)

    @property
    def fx_rows(self) -> int:
        return sum(kind == ChangeKind.fx for _, _, kind in self.prices)


def diff(
    listed: Mapping[str, ListedOffer],
    valid: Sequence[ValidOffer],
    *,
    demo: bool = False,
    known: Mapping[str, KnownOffer] | None = None,
) -> Changes:
    """The changes `valid` (one provider's validated batch) makes to its stored offers by key: `known` if
    given (`tracker.ingest.apply.read_known`), with `listed` holding the full rows of those of them the batch
    states and validation did not take as stored; else `listed` holds every stored offer in full."""
    changes = Changes()
    stored_keys: Mapping[str, KnownOffer] = listed if known is None else known
    # The stored quality arrays repeat across a marketplace's hosts: each distinct text is decoded once.
    stored: dict[str | None, tuple[Any, ...]] = {}
    for v in valid:
        key = v.scraped.key
        if v.same_as is not None:  # the same observation as the stored one: validation vouched for it
            changes.level.same[(v.gpu.id, v.scraped.pricing)] += 1
        elif (row := listed.get(key)) is None:
            if key in stored_keys:
                raise RuntimeError(f"offer {key!r} is stored but was not read in full for the diff")
            changes.level.fresh[(v.gpu.id, v.scraped.pricing)].append(float(v.price_per_gpu_hour))
            changes.new.append(v)
        elif _unchanged(row, v, demo, stored):
            # Most of a repeated scrape: one tuple comparison instead of the rules one by one.
            changes.level.same[(v.gpu.id, v.scraped.pricing)] += 1
            if row.observed_digest != v.digest:  # nothing shown changed, but the row keeps what it came from
                changes.rewritten.append((row.id, v))
        else:
            _compare(changes, row, v, demo, stored)
    incoming = {v.scraped.key for v in valid}
    changes.gone = [row.id for key, row in stored_keys.items() if key not in incoming and not row.delisted]
    return changes


def _unchanged(row: ListedOffer, v: ValidOffer, demo: bool, stored: dict[str | None, tuple[Any, ...]]) -> bool:
    """Listed, and nothing `_compare` looks at differs: it would only count the offer in `level.same`.
    A row without a native amount (written before they were kept) takes the full comparison."""
    s, conversion = v.scraped, v.conversion
    native, currency = (conversion.native_per_hour, conversion.currency) if conversion else (v.price_per_hour, "USD")
    return (
        row.delisted,
        row.price_native_per_hour,
        row.currency,
        row.price_per_hour,
        row.gpu_count,
        row.gpu_id,
        row.price_kind,
        row.orderable,
        row.available,
        row.region,
        row.demo,
    ) == (
        False,
        native,
        currency,
        v.price_per_hour,
        s.gpu_count,
        v.gpu.id,
        s.price_kind.value,
        s.orderable,
        s.available,
        s.region,
        demo,
    ) and _stored(row.quality, stored) == _quality(s.attributes)


def _compare(
    changes: Changes, row: ListedOffer, v: ValidOffer, demo: bool, stored: dict[str | None, tuple[Any, ...]]
) -> None:
    """One stored offer against its new observation (the rules in the module docstring)."""
    card = (v.gpu.id, v.scraped.pricing)
    reopened = bool(row.delisted)
    # The quote as stated is the price; a row written before native amounts were kept was quoted in USD.
    native = v.conversion.native_per_hour if v.conversion else v.price_per_hour
    stored_native = row.price_native_per_hour if row.price_native_per_hour is not None else row.price_per_hour
    currency = v.conversion.currency if v.conversion else "USD"
    price_changed = stored_native != native or row.currency != currency
    usd_changed = row.price_per_hour != v.price_per_hour
    count_changed = row.gpu_count != v.scraped.gpu_count
    card_changed = row.gpu_id != v.gpu.id
    kind_changed = row.price_kind != v.scraped.price_kind.value or row.orderable != v.scraped.orderable
    availability_changed = row.available != v.scraped.available
    described_changed = (
        availability_changed
        or card_changed
        or count_changed
        or kind_changed
        or row.region != v.scraped.region
        or row.demo != demo
        # Offers are filtered on these (verified, datacenter, reliability): a stale copy would
        # keep a deverified host in a "verified only" answer. Other attributes may lag.
        or _stored(row.quality, stored) != _quality(v.scraped.attributes)
    )
    if reopened:  # a delisted offer's price is older than the last good run's
        changes.level.fresh[card].append(float(v.price_per_gpu_hour))
    elif price_changed or count_changed or usd_changed:
        changes.level.add_moved(card, v, row)
    else:
        changes.level.same[card] += 1
    if reopened or price_changed or usd_changed or described_changed or row.observed_digest != v.digest:
        changes.rewritten.append((row.id, v))
    if reopened or price_changed or count_changed or card_changed or kind_changed:
        if not reopened:  # a returning offer's last rows were closed when it was delisted
            changes.close_prices.append(row.id)
        changes.prices.append((row.id, v, ChangeKind.price))
        changes.reopened += int(reopened)
    elif usd_changed:
        changes.close_prices.append(row.id)
        changes.prices.append((row.id, v, ChangeKind.fx))
    if reopened or availability_changed:
        if not reopened:
            changes.close_availability.append(row.id)
        changes.availability.append((row.id, v))


def _stored(quality: str | None, memo: dict[str | None, tuple[Any, ...]]) -> tuple[Any, ...]:
    # One small array per offer: decoding it costs a fraction of what six JSON lookups in SQL did.
    try:
        return memo[quality]
    except KeyError:
        found = memo[quality] = tuple(json.loads(quality)) if quality else (None,) * len(QUALITY_ATTRIBUTES)
        return found


def _quality(attributes: dict[str, Any] | None) -> tuple[Any, ...]:
    return tuple((attributes or {}).get(k) for k in QUALITY_ATTRIBUTES)
