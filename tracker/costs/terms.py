"""An offer's cost terms: what its bill adds to $/hour × hours, and where each figure came from.

Three sources, best first: what the provider's API said for this very offer (the adapters put it in
`attributes["cost_terms"]`, `providers.cost_terms`; ingest keeps it with history in `offer_cost_terms`),
the provider's dated sheet (`data/cost_terms.toml`, with the pages it was read from), and the defaults
below. Every term carries its source, so a ranking can say which parts of a cost were known.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # a type only: the advisor's module loads the HTTP stack, which a ranking never needs
    from providers.spot.aws_advisor import Band

__all__ = [
    "DEFAULTS",
    "DEFAULT_SPOT_RATE",
    "NUMERIC_TERMS",
    "SOURCES",
    "TERMS",
    "CostTerms",
    "advisor_rate",
    "host_rate",
    "resolve",
    "sheet",
]

Source = Literal["api", "sheet", "default"]
SOURCES: tuple[Source, ...] = ("api", "sheet", "default")

# Numeric terms (Decimal) in a fixed order: the ranking keeps one float column per term in this order.
NUMERIC_TERMS = (
    "billing_increment_s",
    "billing_minimum_s",
    "included_disk_gb",
    "disk_usd_per_gb_month",
    "egress_usd_per_gb",
    "ingress_usd_per_gb",
    "download_mbps",
    "hours_per_month",
    "interruptions_per_hour",
)
TERMS = (*NUMERIC_TERMS, "stopped_bills")

# Spot / interruptible offers whose provider publishes no interruption data: one interruption per 20 hours
# on average. Marketplace bids are outbid and cloud spot capacity is reclaimed without a published rate;
# at this rate a 3-hour run is interrupted with probability 14%, a 10-hour one 39% (1 - e^(-rate·h)),
# which is the seed's point: longer spot runs are riskier.
DEFAULT_SPOT_RATE = Decimal("0.05")

# What a bill adds when neither the API nor the provider's sheet says (documented in the README note):
DEFAULTS: dict[str, Decimal | bool] = {
    "billing_increment_s": Decimal(60),  # per-minute billing: the common case among GPU clouds
    "billing_minimum_s": Decimal(0),
    "included_disk_gb": Decimal(0),  # assume every GB of disk the job needs is paid for separately
    "disk_usd_per_gb_month": Decimal("0.10"),  # a typical block-storage price (RunPod, DigitalOcean volumes)
    "egress_usd_per_gb": Decimal(0),  # GPU clouds rarely charge for traffic; hyperscalers are on the sheet
    "ingress_usd_per_gb": Decimal(0),
    "download_mbps": Decimal(1000),  # 1 Gbit/s: what datacenter hosts commonly sustain for downloads
    "hours_per_month": Decimal(730),  # 8,760 h / 12, the hyperscalers' month
    "interruptions_per_hour": Decimal(0),  # on-demand and reserved: the spot rate is set in `resolve`
    "stopped_bills": True,  # a stopped machine's disk bills on every provider we know of
}

# AWS Spot Instance Advisor bands ("frequency of interruption" over the last month, read by
# providers.spot.aws_advisor): the middle of a band, and 5 points past the bound of the open ">20%".
_OPEN_BAND_PAST = 0.05
_ADVISOR_MONTH_H = 730.0


@dataclass(frozen=True, slots=True)
class CostTerms:
    """One offer's terms, every one resolved, with the source of each (`sources[name]`)."""

    values: Mapping[str, Decimal | bool]
    sources: Mapping[str, Source]

    def number(self, name: str) -> Decimal:
        value = self.values[name]
        if isinstance(value, bool):
            raise TypeError(f"{name} is not a number")
        return value

    @property
    def stopped_bills(self) -> bool:
        return bool(self.values["stopped_bills"])

    def known(self) -> dict[str, Source]:
        return dict(self.sources)


@cache
def sheet() -> dict[str, dict[str, Any]]:
    """The per-provider sheet (data/cost_terms.toml): provider → its terms, `checked` date and `sources`."""
    with resources.files("tracker.costs").joinpath("data/cost_terms.toml").open("rb") as fh:
        data = tomllib.load(fh)
    out: dict[str, dict[str, Any]] = {}
    for provider, entry in data.items():
        unknown = set(entry) - set(TERMS) - {"checked", "sources"}
        if unknown or not entry.get("sources") or not entry.get("checked"):
            raise ValueError(f"cost_terms.toml [{provider}]: unknown keys {sorted(unknown)} or no sources/checked")
        out[provider] = {
            k: v if isinstance(v, bool) or k in ("checked", "sources") else Decimal(str(v)) for k, v in entry.items()
        }
    return out


def host_rate(reliability: float) -> Decimal | None:
    """Host failures per hour from a Vast host's `reliability` score, read as the chance the host stays
    up through a day (Vast gives the score no horizon; a day matches its daily reliability updates)."""
    if not (0.0 < reliability <= 1.0) or math.isnan(reliability):
        return None
    return Decimal(repr(-math.log(reliability) / 24.0))


def advisor_rate(band: Band) -> Decimal:
    """Interruptions per hour for an AWS Spot Advisor band ("<5%" ... ">20%" of instances a month): the
    band's middle share p as a Poisson rate, -ln(1 - p) / 730 h."""
    p = (band.low + band.high) / 2 if band.high is not None else band.low + _OPEN_BAND_PAST
    return Decimal(repr(-math.log1p(-min(p, 0.99)) / _ADVISOR_MONTH_H))


def _api_value(name: str, raw: object) -> Decimal | bool | None:
    if raw is None:
        return None
    if name == "stopped_bills":
        return raw if isinstance(raw, bool) else None
    try:
        value = Decimal(str(raw))
    except ArithmeticError:
        return None
    if name == "download_mbps" and value <= 0:
        return None  # no bandwidth is no measurement
    return value if value.is_finite() and value >= 0 else None


@cache
def _provider_terms(provider: str) -> tuple[dict[str, Decimal | bool], dict[str, Source]]:
    """The sheet's terms of `provider`, else the defaults: what every offer of it starts from."""
    row = sheet().get(provider, {})
    values: dict[str, Decimal | bool] = {}
    sources: dict[str, Source] = {}
    for name in TERMS:
        if name in row:
            values[name], sources[name] = row[name], "sheet"
        else:
            values[name], sources[name] = DEFAULTS[name], "default"
    return values, sources


def resolve(
    provider: str,
    pricing: str | None,
    api: Mapping[str, object] | None = None,
    *,
    reliability: float | None = None,
    advisor: Band | None = None,
) -> CostTerms:
    """The terms of one offer: the API's (`api`, as ingest stored them), else the sheet's, else DEFAULTS.

    Interruptions per hour: 0 unless the offer is spot; a spot offer takes the AWS advisor band where one
    is known, else the default spot rate, plus for a marketplace host its failure rate from `reliability`
    (a term known from the API only in part is marked by its weakest part: "default")."""
    base_values, base_sources = _provider_terms(provider)
    values, sources = dict(base_values), dict(base_sources)
    for name, raw in (api or {}).items():
        if name in values and (stated := _api_value(name, raw)) is not None:
            values[name], sources[name] = stated, "api"
    if pricing == "spot":
        if advisor is not None:  # the published band of this instance type in this region
            values["interruptions_per_hour"], sources["interruptions_per_hour"] = advisor_rate(advisor), "api"
        else:
            host = host_rate(reliability) if reliability is not None else None
            rate = DEFAULT_SPOT_RATE + (host or Decimal(0))
            values["interruptions_per_hour"], sources["interruptions_per_hour"] = rate, "default"
    else:
        # Not interruptible: the pricing kind the provider listed says so.
        values["interruptions_per_hour"], sources["interruptions_per_hour"] = Decimal(0), "api"
    return CostTerms(values, sources)
