"""Validate: per-offer checks, conversion to USD and GPU name resolution, before anything is stored.

An offer that fails a check (duplicate key, non-positive count or price, a reservation without its term or
with one that is not a commitment, a currency without a recent rate, a price above the sanity ceiling) is
set aside with the reason; a GPU name the catalog cannot resolve is set aside and counted by name. A term
is stored in the one spelling of `providers.parsing.reservation_term`. Nothing here reads or writes the
database: the exchange rates come in as a `RateBook`, and the listed offers' digests as `known`.

An offer whose digest (`tracker.ingest.digest`) equals its listed offer's is valid as stored: it was checked,
converted and resolved to those figures before, in the same context. It is taken without the checks, with
the stored USD prices, and marked `same_as` its stored offer, so the diff and the cost terms pass it by.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal
from typing import Protocol

from providers.contract import Pricing, ProviderError, ScrapedOffer, ScrapeResult, offer_problem
from providers.parsing import reservation_term
from tracker.catalog.gpus import GpuCatalog, GpuNameError, GpuSpec
from tracker.catalog.variants import Resolved, resolve_offer_gpu
from tracker.config import Settings
from tracker.ingest.digest import batch_context, offer_digest
from tracker.ingest.fx import Conversion, CurrencyError, RateBook, convert


@dataclass(slots=True)
class ValidOffer:
    scraped: ScrapedOffer
    gpu: GpuSpec
    price_per_hour: Decimal  # USD
    price_per_gpu_hour: Decimal  # USD
    # The quote as stated and the rate used; None: built as USD, or taken as stored (`same_as`), which
    # nothing converts again.
    conversion: Conversion | None = None
    digest: str | None = None  # the observation's (tracker.ingest.digest), stored with the offer row
    same_as: int | None = None  # the listed offer's id when the digests matched: unchanged, nothing to write


class KnownOffer(Protocol):
    """A listed offer as ingest's first read has it (`tracker.ingest.apply.read_known`)."""

    @property
    def id(self) -> int: ...
    @property
    def delisted(self) -> bool: ...
    @property
    def gpu_id(self) -> str: ...
    @property
    def observed_digest(self) -> str | None: ...
    @property
    def price_per_hour(self) -> Decimal: ...
    @property
    def price_per_gpu_hour(self) -> Decimal: ...


@dataclass
class Prepared:
    valid: list[ValidOffer] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    unknown: dict[str, str] = field(default_factory=dict)  # raw name → why it did not resolve
    unknown_counts: Counter[str] = field(default_factory=Counter)
    assumed: dict[str, str] = field(default_factory=dict)  # raw name → card chosen when only the form factor was open


def validate_batch(
    result: ScrapeResult,
    catalog: GpuCatalog,
    settings: Settings,
    provider: str | None = None,
    rates: RateBook | None = None,
    *,
    known: Mapping[str, KnownOffer] | None = None,
    demo: bool = False,
) -> Prepared:
    """Per-offer validation, conversion to USD and GPU name resolution (with the provider's naming conventions).

    Without `rates` (no database at hand) only offers quoted in USD can be valid; any other is set aside
    with the reason, like an offer whose currency is unknown or has no rate recent enough. `known`: the
    provider's stored offers by key, whose digests let an unchanged observation through as stored; `demo`:
    the batch's demo flag, part of every digest."""
    out = Prepared(invalid=list(result.skipped))
    book = rates or RateBook.empty(date.min)
    seen_keys: set[str] = set()
    resolved: dict[tuple[str, Decimal | None], Resolved | GpuNameError] = {}
    context = batch_context(provider, demo, settings.max_price_per_gpu_hour)
    plain: dict[tuple[str, str | None], bool] = {}  # (name, term) -> neither a slice nor a term to respell
    for offer in result.offers:
        if offer.key in seen_keys:
            out.invalid.append(f"{offer.key}: duplicate key in batch")
            continue
        seen_keys.add(offer.key)
        digest = _digest(offer, context, book)
        row = known.get(offer.key) if known is not None and digest is not None else None
        same = _as_stored(offer, row, digest, catalog, provider, resolved, plain) if row is not None else None
        if same is not None:
            stored, card = same
            out.valid.append(stored)
            if card.assumed:
                out.assumed[offer.gpu_name] = card.card.id
            continue
        if problem := offer_problem(offer):  # a column it would not fit, a negative or huge number
            out.invalid.append(f"{offer.key[:80]}: {problem}")
            continue
        if offer.gpu_count <= 0:
            out.invalid.append(f"{offer.key}: gpu_count {offer.gpu_count} is not positive")
            continue
        if offer.price_per_hour <= 0:
            out.invalid.append(f"{offer.key}: price {offer.price_per_hour} is not positive")
            continue
        # A reservation is priced for its term, so one without a term (or an on-demand/spot offer
        # carrying one) would be compared against the wrong prices: set aside, never shown as on-demand.
        if (offer.pricing == Pricing.reserved) != bool(offer.reserved_term):
            out.invalid.append(
                f"{offer.key}: pricing {offer.pricing!s} with reserved_term {offer.reserved_term!r} "
                "(a reservation needs its term, and only a reservation has one)"
            )
            continue
        if offer.reserved_term:
            # The one vocabulary of terms (providers.parsing.reservation_term): an adapter or an import that
            # wrote "12mo", "1-year" or "1 yr" stores "1y", so one commitment is one group everywhere.
            try:
                term = reservation_term(offer.reserved_term, f"{offer.key}.reserved_term")
            except ProviderError as exc:
                out.invalid.append(f"{offer.key[:80]}: {exc}")
                continue
            if term != offer.reserved_term:
                offer = replace(offer, reserved_term=term)
        if catalog.is_slice_name(offer.gpu_name):
            sliced = as_slice(offer, catalog, provider)
            if isinstance(sliced, str):
                out.invalid.append(f"{offer.key}: {sliced}")
                continue
            offer = sliced  # priced as what it is: its fraction of the card, with its own memory
        try:
            money = convert(offer.price_per_hour, offer.gpu_count, book.rate_for(offer.currency))
        except CurrencyError as exc:
            out.invalid.append(f"{offer.key}: {exc}")
            continue
        per_gpu = money.usd_per_gpu_hour
        if per_gpu <= 0:  # a rate that rounds a real price to $0 would top every "cheapest" list
            out.invalid.append(f"{offer.key}: {offer.price_per_hour} {offer.currency} is $0 after conversion")
            continue
        if per_gpu > settings.max_price_per_gpu_hour:
            out.invalid.append(
                f"{offer.key}: ${per_gpu}/GPU-hour is above the sanity ceiling ${settings.max_price_per_gpu_hour}"
            )
            continue
        found = _resolve(offer, catalog, provider, resolved)
        if isinstance(found, GpuNameError):
            out.unknown.setdefault(offer.gpu_name, str(found))
            out.unknown_counts[offer.gpu_name] += 1
            continue
        gpu = found.card
        if found.assumed:
            out.assumed[offer.gpu_name] = gpu.id
            offer.attributes = offer.attributes | {"variant_assumed": found.assumed}
        out.valid.append(ValidOffer(offer, gpu, money.usd_per_hour, per_gpu, money, digest))
    return out


def _digest(offer: ScrapedOffer, context: str, book: RateBook) -> str | None:
    """The observation's digest, or None where its currency has no rate (the full path sets it aside)."""
    try:
        applied = book.rate_for(offer.currency)  # looked up once per currency (RateBook's memo)
    except CurrencyError:
        return None
    # What conversion multiplies by; the rate's day and source are not compared by the diff.
    return offer_digest(offer, context, "" if applied is None else repr(applied.usd_per_unit))


def _resolve(
    offer: ScrapedOffer,
    catalog: GpuCatalog,
    provider: str | None,
    resolved: dict[tuple[str, Decimal | None], Resolved | GpuNameError],
) -> Resolved | GpuNameError:
    # A slice (< 1 GPU) offers part of a card's memory: its name, not its memory, identifies the card.
    memory = offer.gpu_memory_gb if offer.gpu_count >= 1 else None
    cache_key = (offer.gpu_name, memory)
    if SLICE_CARD in offer.attributes:  # a MIG slice, its parent card resolved by as_slice
        resolved[cache_key] = Resolved(catalog.get(offer.attributes[SLICE_CARD]))
    if cache_key not in resolved:
        try:  # the provider's documented policy, else the slowest variant, said on the offer
            resolved[cache_key] = resolve_offer_gpu(
                catalog, offer.gpu_name, float(memory) if memory is not None else None, provider=provider
            )
        except GpuNameError as exc:
            resolved[cache_key] = exc
    return resolved[cache_key]


def _as_stored(
    offer: ScrapedOffer,
    row: KnownOffer,
    digest: str | None,
    catalog: GpuCatalog,
    provider: str | None,
    resolved: dict[tuple[str, Decimal | None], Resolved | GpuNameError],
    plain: dict[tuple[str, str | None], bool],
) -> tuple[ValidOffer, Resolved] | None:
    """An observation identical to the listed offer's last one (the same digest, listed), as that offer's
    stored figures; None where it is not, where it needs what only the full path does (a MIG slice, a term to
    respell) or where its card no longer resolves to the stored one (the catalog changed): the full path
    decides those."""
    if digest is None or row.observed_digest != digest or row.delisted:
        return None
    key = (offer.gpu_name, offer.reserved_term)
    if (ok := plain.get(key)) is None:
        ok = plain[key] = not catalog.is_slice_name(offer.gpu_name) and _canonical_term(offer.reserved_term)
    if not ok or SLICE_CARD in offer.attributes:
        return None
    found = _resolve(offer, catalog, provider, resolved)
    if isinstance(found, GpuNameError) or found.card.id != row.gpu_id:
        return None
    return ValidOffer(offer, found.card, row.price_per_hour, row.price_per_gpu_hour, None, digest, row.id), found


def _canonical_term(term: str | None) -> bool:
    if term is None:
        return True
    try:
        return reservation_term(term, "reserved_term") == term
    except ProviderError:
        return False


# A MIG slice's attributes (offers.attributes): what it is cut from and how big a share it is.
SLICE_PROFILE = "mig_profile"  # "1g.10gb"
SLICE_SHARE = "mig_share"  # of the card's compute, as NVIDIA writes it: "1/7"
SLICE_CARD = "mig_card"  # the parent card's id
COUNT_PLACES = Decimal("0.001")  # what offers.gpu_count holds: the stored count must equal the compared one


def as_slice(offer: ScrapedOffer, catalog: GpuCatalog, provider: str | None) -> ScrapedOffer | str:
    """A MIG slice offer as its share of the parent card: `gpu_count` its fraction of the card (a 1g.10gb
    A100 slice is 1/7 of a GPU, so its $/GPU-hour is that of a whole card's worth), `gpu_memory_gb` the
    slice's own memory (what a job must fit in), the profile, share and parent card in its attributes.
    Why not, as a reason, for a name the catalog cannot place or an offer of several slices (several
    separate devices are not one card's share, and no estimate spans them)."""
    if offer.gpu_count != 1:
        return f"{offer.gpu_count} MIG slices in one offer: several separate slices are not priced as one GPU"
    memory = float(offer.gpu_memory_gb) if offer.gpu_memory_gb is not None else None
    try:
        piece = catalog.normalize_slice(offer.gpu_name, memory, provider=provider)
    except GpuNameError as exc:
        return f"MIG slice {offer.gpu_name!r} not placed: {exc}"
    attributes = offer.attributes | {SLICE_PROFILE: piece.profile, SLICE_SHARE: piece.share, SLICE_CARD: piece.card.id}
    if piece.assumed:
        attributes["variant_assumed"] = piece.assumed
    return replace(
        offer,
        gpu_count=Decimal(str(piece.fraction)).quantize(COUNT_PLACES),
        gpu_memory_gb=Decimal(str(piece.memory_gb)),
        attributes=attributes,
    )
