"""Offer filters on availability and quality: the one place that says what they mean.

Offers (`/v1/offers`, `gpu-tracker offers`), rankings (`/v1/rank`, `cheapest`) and alert rules all
filter through here: SQL conditions for the queries that filter in the database, and a numpy mask over
the same values, computed by the same SQL when the live table is loaded (`tracker.market.live`), for
the ranking. So the two can only disagree if this module does.

**Available** (`available_only`): the provider says the offer can be rented now (`available` is
true). An offer whose provider does not say (`available` NULL: list prices from AWS, GCP, Azure, …)
is *not* available: "available" is a claim we can only repeat, never assume. The availability history
(`tracker.market.availability`) counts time the same way.

**Quality** attributes, as adapters store them in `offers.attributes`:

* `verification`: verified | unverified | deverified (Vast.ai's host verification);
* `hosting`: datacenter | consumer (Vast.ai's hosting type);
* `reliability`: a number from 0 to 1 (Vast.ai's host reliability score);
* `cloud`: secure | community (RunPod's Secure and Community Cloud).

A value outside those (a typo, a string where a number belongs) counts as not stated. When an offer
does not state an attribute, its provider may vouch for it by its kind:

* an offer of a **cloud** provider (`ProviderKind.cloud`: the provider runs the machines itself) is
  on its `cloud: secure` unless it says otherwise — RunPod's Community Cloud offers say `community`;
* a **secure** offer (stated or by kind) is `verification: verified` and `hosting: datacenter`
  unless it states its own, and passes `min_reliability` when it states no score (the provider, not
  a host, answers for the machine); a score it does state must meet the minimum;
* everything else — marketplace hosts (Vast.ai, TensorDock, …), Community Cloud hosts, and static
  reference sheets (which price no particular machine) — has only what it states: an unstated
  attribute fails the filter that asks for it. `verified_only` keeps only offers that are verified
  (said so, or vouched for), never "not known to be unverified".

Filters: `verified_only` (verification is verified), `datacenter_only` (hosting is datacenter),
`min_reliability` (score ≥ the minimum, or vouched for without a score), `cloud` (secure or
community, as above).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import numpy as np
from sqlalchemy import ColumnElement, and_, case, false, func, or_

from providers.contract import ProviderKind
from providers.registry import all_providers
from tracker.storage.sql import json_number, json_text
from tracker.storage.tables import Offer

if TYPE_CHECKING:  # type-only: numpy.typing costs a command-line call ~10 ms to import
    import numpy.typing as npt

    from tracker.market.table import OfferTable

    Mask: TypeAlias = npt.NDArray[np.bool_]

VERIFICATIONS = ("verified", "unverified", "deverified")
HOSTINGS = ("datacenter", "consumer")
CLOUDS = ("secure", "community")

__all__ = [
    "CLOUDS",
    "HOSTINGS",
    "VERIFICATIONS",
    "OfferQuality",
    "active",
    "check",
    "columns",
    "conditions",
    "hosting_of",
    "mask",
]


class OfferQuality(Protocol):
    """The filters this module applies (OfferFilters, RankFilters and alert rules all have them)."""

    @property
    def available_only(self) -> bool: ...
    @property
    def verified_only(self) -> bool: ...
    @property
    def datacenter_only(self) -> bool: ...
    @property
    def min_reliability(self) -> float | Decimal | None: ...
    @property
    def cloud(self) -> str | None: ...


def check(f: OfferQuality) -> None:
    """ValueError naming the filter when a value is out of range (callers add their field names)."""
    if f.min_reliability is not None and not 0 <= f.min_reliability <= 1:
        raise ValueError(f"min_reliability must be between 0 and 1, got {f.min_reliability}")
    if f.cloud is not None and f.cloud not in CLOUDS:
        raise ValueError(f"cloud must be one of {', '.join(CLOUDS)}, got {f.cloud!r}")


def active(f: OfferQuality) -> bool:
    """Whether any of the filters is on."""
    return bool(f.available_only or f.verified_only or f.datacenter_only or f.min_reliability is not None or f.cloud)


def _operators() -> list[str]:
    return [name for name, cls in all_providers().items() if cls.kind == ProviderKind.cloud]


def _stated(key: str, allowed: Sequence[str]) -> ColumnElement[Any]:
    # A simple CASE reads the member once: the live table evaluates this for every listed offer.
    return case({v: v for v in allowed}, value=json_text(Offer.attributes, key), else_=None)


def _cloud() -> ColumnElement[Any]:
    by_kind = case((Offer.provider.in_(_operators()), "secure"), else_=None)
    return func.coalesce(_stated("cloud", CLOUDS), by_kind)


def _vouched() -> ColumnElement[bool]:
    return func.coalesce(_cloud() == "secure", false())


def _verification() -> ColumnElement[Any]:
    return func.coalesce(_stated("verification", VERIFICATIONS), case((_vouched(), "verified"), else_=None))


def _hosting() -> ColumnElement[Any]:
    return func.coalesce(_stated("hosting", HOSTINGS), case((_vouched(), "datacenter"), else_=None))


def _reliability() -> ColumnElement[Any]:
    score = json_number(Offer.attributes, "reliability")
    return case((and_(score >= 0, score <= 1), score), else_=None)


def columns() -> dict[str, ColumnElement[Any]]:
    """Each offer's effective quality values (stated, else vouched for), for the live table."""
    return {
        "verification": _verification(),
        "hosting": _hosting(),
        "cloud": _cloud(),
        "reliability": _reliability(),
    }


def conditions(f: OfferQuality) -> list[ColumnElement[bool]]:
    """The filters as SQL conditions on `offers` (all must hold)."""
    out: list[ColumnElement[bool]] = []
    if f.available_only:
        out.append(Offer.available.is_(True))
    if f.verified_only:
        out.append(_verification() == "verified")
    if f.datacenter_only:
        out.append(_hosting() == "datacenter")
    if f.cloud:
        out.append(_cloud() == f.cloud)
    if f.min_reliability is not None:
        score = _reliability()
        out.append(or_(score >= float(f.min_reliability), and_(score.is_(None), _vouched())))
    return out


def _equals(values: npt.NDArray[Any], wanted: str) -> Mask:
    return np.fromiter((v == wanted for v in values), dtype=bool, count=len(values))


def mask(table: OfferTable, f: OfferQuality) -> Mask:
    """The filters over the live table's columns (loaded by `columns()`): True where an offer passes."""
    keep = np.ones(len(table), dtype=bool)
    if f.available_only:
        keep &= np.fromiter((a is True for a in table["available"]), dtype=bool, count=len(table))
    if f.verified_only:
        keep &= _equals(table["verification"], "verified")
    if f.datacenter_only:
        keep &= _equals(table["hosting"], "datacenter")
    if f.cloud:
        keep &= _equals(table["cloud"], f.cloud)
    if f.min_reliability is not None:
        score = table["reliability_f"]
        with np.errstate(invalid="ignore"):
            keep &= (score >= float(f.min_reliability)) | (np.isnan(score) & _equals(table["cloud"], "secure"))
    return keep


def hosting_of(provider: str, attributes: Mapping[str, Any]) -> str | None:
    """An offer's effective hosting from its provider and stored attributes: the rule `columns()` writes in
    SQL, for callers that hold the rows themselves (the price index, which also reads exports)."""
    stated = attributes.get("hosting")
    if isinstance(stated, str) and stated in HOSTINGS:
        return stated
    cloud = attributes.get("cloud")
    if not (isinstance(cloud, str) and cloud in CLOUDS):
        cloud = "secure" if provider in _operators() else None
    return "datacenter" if cloud == "secure" else None
