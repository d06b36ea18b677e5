"""Cost terms an adapter read from the provider's API, under one documented attribute of the offer.

What a run costs beyond $/hour (disk, data transfer, the billing increment) is said by some APIs per
offer (Vast lists `storage_cost`, `inet_down_cost`, `inet_up_cost` and the bandwidth of every host;
Lambda the local disk of every instance type). An adapter puts what its API says under
`ScrapedOffer.attributes[COST_TERMS]` as a dict keyed by the names below, amounts as decimal strings;
`tracker.ingest.costs` stores them with history and `tracker.costs` fills the rest from a dated sheet
or a documented default. A key is present only when the API said it: absence means "not said".
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

__all__ = ["COST_TERMS", "ONE_OFF_KEYS", "TERM_KEYS", "terms"]

COST_TERMS = "cost_terms"

TERM_KEYS: dict[str, str] = {
    "billing_increment_s": "the bill rounds run time up to a multiple of this many seconds",
    "billing_minimum_s": "the least run time billed, in seconds",
    "included_disk_gb": "disk (GB) already paid for by the offer's $/hour",
    "disk_usd_per_gb_month": "USD per GB-month of disk beyond the included disk",
    "egress_usd_per_gb": "USD per GB sent out of the machine",
    "ingress_usd_per_gb": "USD per GB downloaded onto the machine",
    "stopped_bills": "whether a stopped instance still bills its disk (true/false)",
    "download_mbps": "the host's measured download bandwidth, Mbit/s",
}


# One-off charges, in the offer's own currency (a Hetzner setup fee is EUR, like its hourly price): never
# part of $/hour. They stay in the offer's attributes; `offer_cost_terms` keeps history only of TERM_KEYS
# (its columns), so a change of a one-off fee is seen in the offer's attributes, not in that table.
ONE_OFF_KEYS: dict[str, str] = {
    "setup_fee": "a one-off fee charged once when the machine is ordered, in the offer's currency",
}


def terms(**values: Decimal | bool | None) -> dict[str, Any]:
    """The attribute value for the terms given (None: not said, left out), amounts as strings."""
    unknown = set(values) - set(TERM_KEYS) - set(ONE_OFF_KEYS)
    if unknown:
        raise KeyError(f"unknown cost terms: {sorted(unknown)}")
    return {k: v if isinstance(v, bool) else str(v) for k, v in values.items() if v is not None}
