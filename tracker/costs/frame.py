"""Every live offer's cost terms as float columns, built once per data version, for ranking.

The market's live table (tracker.market.live) gives ids, providers, pricing and host reliability; the
stored API terms (`offer_cost_terms`, open rows; stopped_bills is not stated by any API yet and is
left to the sheet here) are read here, and `tracker.costs.terms.resolve` fills
the rest. Per (provider, pricing) the sheet and defaults are resolved once, then the offers that state
terms override them, so 20,000 offers cost a few hundred thousand assignments, not 20,000 resolutions.
`terms_at` gives the exact `CostTerms` of one offer (the rows a ranking returns).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.costs.terms import DEFAULT_SPOT_RATE, NUMERIC_TERMS, CostTerms, resolve
from tracker.storage.tables import OfferCostTerms

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["TermColumns", "load_stated", "term_columns"]

_RESOLVED_MAX = 8192
_STATED = tuple(c for c in NUMERIC_TERMS if c not in ("hours_per_month", "interruptions_per_hour"))


def load_stated(session: Session) -> dict[int, dict[str, Any]]:
    """offer id → the terms its API states now (open `offer_cost_terms` rows; None: not said)."""
    names = (*_STATED, "stopped_bills")
    stmt = select(OfferCostTerms.offer_id, *[getattr(OfferCostTerms, n) for n in names]).where(
        OfferCostTerms.valid_to.is_(None)
    )
    return {row[0]: dict(zip(names, row[1:], strict=True)) for row in session.execute(stmt).all()}


@dataclass(frozen=True)
class TermColumns:
    """Float columns per numeric term, aligned with the live table's rows, and what `terms_at` needs.

    `stated[name]` flags the rows whose API states the term; its value is then `values[name]`, exact
    back as a Decimal (every stored term has at most 15 significant digits, which a float round-trips)."""

    values: dict[str, npt.NDArray[np.float64]]
    stated: dict[str, npt.NDArray[np.bool_]]
    providers: npt.NDArray[Any]
    pricing: npt.NDArray[Any]
    reliability: npt.NDArray[np.float64]
    # Row → its resolved terms. The offers a ranking shows are mostly the same from one job to the next
    # (the cheapest hosts), so each is resolved once per table, not once per answer (~30 µs each, 50 a
    # ranking). Bounded: a table's rows are many; the shown ones are few.
    _resolved: dict[int, CostTerms] = field(default_factory=dict, compare=False, repr=False)

    def terms_at(self, i: int) -> CostTerms:
        """The exact terms of row `i`, by the same rule the columns were built with."""
        if (known := self._resolved.get(i)) is not None:
            return known
        api = {n: Decimal(repr(float(self.values[n][i]))) for n in _STATED if self.stated[n][i]}
        rel = float(self.reliability[i])
        terms = resolve(str(self.providers[i]), _text(self.pricing[i]), api, reliability=None if rel != rel else rel)
        if len(self._resolved) >= _RESOLVED_MAX:
            self._resolved.clear()
        self._resolved[i] = terms
        return terms


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def term_columns(
    ids: npt.NDArray[np.int64],
    providers: npt.NDArray[Any],
    pricing: npt.NDArray[Any],
    reliability: npt.NDArray[np.float64],
    stated: dict[int, dict[str, Any]],
) -> TermColumns:
    n = len(ids)
    values = {name: np.zeros(n, dtype=np.float64) for name in NUMERIC_TERMS}
    flags = {name: np.zeros(n, dtype=bool) for name in _STATED}
    groups: dict[tuple[str, str | None], list[int]] = {}
    for i, key in enumerate(zip(providers.tolist(), pricing.tolist(), strict=True)):
        groups.setdefault((str(key[0]), _text(key[1])), []).append(i)
    for (provider, kind), rows in groups.items():
        base = resolve(provider, kind, None)
        at = np.array(rows, dtype=np.intp)
        for name in NUMERIC_TERMS:
            values[name][at] = float(base.number(name))
    for i, offer_id in enumerate(ids.tolist()):
        row = stated.get(offer_id)
        if row is None:
            continue
        for name in _STATED:
            if row.get(name) is not None:
                values[name][i] = float(row[name])
                flags[name][i] = True
    # Spot: the default rate plus the host's failure rate where a reliability score is stated
    # (tracker.costs.terms.host_rate), in the same arithmetic as `resolve`.
    is_spot = np.fromiter((p == "spot" for p in pricing.tolist()), dtype=bool, count=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        host = np.where((reliability > 0) & (reliability <= 1), -np.log(reliability) / 24.0, 0.0)
    values["interruptions_per_hour"] = np.where(is_spot, float(DEFAULT_SPOT_RATE) + host, 0.0)
    return TermColumns(values, flags, providers, pricing, reliability)
