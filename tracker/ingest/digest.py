"""The observation digest: how an unchanged offer skips validation, the diff and its cost terms.

A repeated scrape of a marketplace states most offers exactly as before, and ingest used to check,
convert, resolve and compare every one of them again: at 200,000 offers that per-offer Python was most
of an unchanged batch (validation 3.4 s, the diff 2.4 s, the cost terms 1.7 s and the read of the stored
rows' quality members 1 s, of 11 s profiled).

An offer's digest covers every input ingest reads from an observation (every field of the scraped offer,
and the attributes the diff and the cost terms compare) and the batch's context that decides what those
inputs become (the provider, the demo flag, the sanity ceiling, the exchange rate of the offer's
currency, and `RULES`). Ingest stores it on the offer row whenever it writes the row
(`offers.observed_digest`), and rewrites a row whose digest changed even where nothing shown did, so after
every applied batch a listed offer's row holds what its last valid observation made of it. An observation
whose digest equals its listed offer's would be validated, converted and compared to the same result:
`tracker.ingest.validate.validate_batch` takes it as unchanged without those steps, the diff counts it as
the same price and the cost terms keep its open row. Anything else, a row without a digest included, takes
the full path. Attributes outside the digest are the ones a stored row lets lag (`tracker.ingest.diff`).

The text is `repr` of plain values (str, Decimal, bool, None, numbers and the JSON-like members), which
is the same in every process; equal values spelled differently (Decimal("2.5") and Decimal("2.50")) give
two digests, which only costs the full path once.
"""

from __future__ import annotations

import hashlib
from decimal import Decimal

from providers.contract import ScrapedOffer
from providers.cost_terms import COST_TERMS
from tracker.storage.tables import QUALITY_ATTRIBUTES

__all__ = ["DIGEST_ATTRIBUTES", "RULES", "batch_context", "offer_digest"]

# Bump when a rule of validation, conversion, the diff or the cost terms changes what the same observation
# becomes: stored digests made under the old rules then match nothing, and each offer takes the full path once.
RULES = "1"
# The attributes ingest reads from an observation: the quality members the diff compares, the stated cost
# terms, and what marks a MIG slice or an assumed variant (`tracker.ingest.validate`).
DIGEST_ATTRIBUTES = (*QUALITY_ATTRIBUTES, COST_TERMS, "mig_profile", "mig_share", "mig_card", "variant_assumed")


def batch_context(provider: str | None, demo: bool, ceiling: Decimal) -> str:
    """What the batch, not the offer, contributes to every digest."""
    return repr((RULES, provider, demo, ceiling))


def offer_digest(offer: ScrapedOffer, context: str, rate: str) -> str | None:
    """The digest of one observation in its batch's `context`; `rate`: its currency's rate as text ("" for
    USD). None for attributes that are not a mapping: such an offer takes the full path, which says why."""
    a = offer.attributes
    if not isinstance(a, dict):
        return None
    get = a.get
    text = repr(
        (
            context,
            rate,
            offer.key,
            offer.gpu_name,
            offer.gpu_count,
            offer.price_per_hour,
            str(offer.pricing),
            offer.region,
            offer.gpu_memory_gb,
            offer.reserved_term,
            offer.instance_type,
            offer.available,
            offer.vcpus,
            offer.ram_gb,
            offer.currency,
            offer.upstream,
            str(offer.price_kind),
            offer.orderable,
            *map(get, DIGEST_ATTRIBUTES),
        )
    )
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
