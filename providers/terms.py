"""The data terms each source declares (`providers/terms.toml`): its terms' address, whether its prices may
be stored and republished as read on a day, and the credit a republished row carries.

Data, not code, and explicit: one table per registered provider, read on first use (importing this module
reads nothing). A value is "yes" or "no" only where a clause saying so was read, else "unknown";
`tests/providers/test_terms.py` holds every registered provider to a declaration. What an export or the
index does with them (and what the operator's settings change) is `tracker.market.data_terms`'s.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from functools import lru_cache
from importlib import resources
from typing import Any

from providers.contract import ProviderError

__all__ = ["DataTerms", "Permission", "all_terms", "terms_for"]

_FIELDS = {"url", "store", "republish", "read_on", "attribution", "note"}


class Permission(StrEnum):
    """What a source's terms say of one use of its data, as read."""

    yes = "yes"
    no = "no"
    unknown = "unknown"  # no clause could be read: never taken for a yes


@dataclass(frozen=True, slots=True)
class DataTerms:
    provider: str
    url: str  # the terms as read; "" when no terms page was found
    store: Permission  # may the prices be kept in a database
    republish: Permission  # may they be published again (an export, an index)
    read_on: date  # the day the terms were read (or looked for)
    attribution: str  # the credit a republished row carries
    note: str  # what was read, or why a value is unknown

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url or None,
            "store": self.store.value,
            "republish": self.republish.value,
            "read_on": self.read_on.isoformat(),
            "attribution": self.attribution,
            "note": self.note,
        }


def _parse(name: str, table: Any) -> DataTerms:
    where = f"terms.toml [{name}]"
    if not isinstance(table, dict) or set(table) != _FIELDS:
        raise ProviderError(f"{where}: needs exactly {', '.join(sorted(_FIELDS))}")
    try:
        store, republish = Permission(table["store"]), Permission(table["republish"])
    except ValueError:
        raise ProviderError(f"{where}: store and republish are one of {', '.join(Permission)}") from None
    url, read_on = table["url"], table["read_on"]
    if not isinstance(url, str) or (url and not url.startswith("https://")):
        raise ProviderError(f"{where}: url is an https address or empty (no terms page found)")
    if not isinstance(read_on, date):
        raise ProviderError(f"{where}: read_on is a date (YYYY-MM-DD)")
    if not all(isinstance(table[k], str) and table[k].strip() for k in ("attribution", "note")):
        raise ProviderError(f"{where}: attribution and note are non-empty text")
    if Permission.unknown not in (store, republish) and not url:
        raise ProviderError(f"{where}: a yes or no is read from terms: give their url")
    return DataTerms(name, url, store, republish, read_on, table["attribution"], table["note"])


@lru_cache(maxsize=1)
def all_terms() -> dict[str, DataTerms]:
    """Every declaration by provider name (read once). Raises ProviderError on a malformed file."""
    path = resources.files("providers") / "terms.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, tomllib.TOMLDecodeError) as exc:
        raise ProviderError(f"providers/terms.toml unreadable: {exc}") from None
    return {name: _parse(name, table) for name, table in sorted(data.items())}


def terms_for(provider: str) -> DataTerms | None:
    """`provider`'s declaration; None for a name that declares none (not a registered provider)."""
    return all_terms().get(provider)
