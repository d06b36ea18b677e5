"""Per-item parsing for list-shaped listings: one malformed item is dropped with its reason, the rest kept.

An adapter reads a list of items (instance types, nodes, presets) and turns each into offers. A list
whose envelope is wrong (not a list, the field gone) is a changed schema and fails the run; one item
that is wrong (a price that is not a number, a field missing) is that item's problem: it is reported in
`ScrapeResult.skipped` with the `ProviderError` that said why, and every other item still counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from providers.contract import ProviderError, ScrapedOffer, ScrapeResult

__all__ = ["LISTED_TWICE", "ItemParser", "add_unique", "indexed", "parse_items"]

# What one item gives: offers, a reason it gives none (reported), or None when it is not a GPU item at all
# (a CPU plan in a mixed catalog: left out without a reason, as noise would hide the real drops).
ItemParser = Callable[[dict[str, Any], str], "list[ScrapedOffer] | ScrapedOffer | str | None"]


def parse_items(items: Iterable[tuple[str, Any]], parse_one: ItemParser, result: ScrapeResult) -> ScrapeResult:
    """Parse `(where, raw)` pairs into `result`: `where` names the item in every reason."""
    for where, raw in items:
        if not isinstance(raw, dict):
            result.skipped.append(f"{where}: not an object")
            continue
        try:
            parsed = parse_one(raw, where)
        except ProviderError as exc:
            result.skipped.append(f"{where}: {exc}")
            continue
        if parsed is None:
            continue
        if isinstance(parsed, str):
            result.skipped.append(parsed)
        elif isinstance(parsed, ScrapedOffer):
            result.offers.append(parsed)
        else:
            result.offers.extend(parsed)
    return result


def indexed(values: list[Any], what: str) -> list[tuple[str, Any]]:
    """`values` paired with their place: ('data[0]', ...), ('data[1]', ...)."""
    return [(f"{what}[{i}]", v) for i, v in enumerate(values)]


LISTED_TWICE = ": listed twice"


def add_unique(result: ScrapeResult, offers: Iterable[ScrapedOffer], seen: set[str]) -> int:
    """Add `offers` whose keys `seen` does not hold yet; a repeated key is reported, not stored twice (a
    paginated listing may repeat a row across pages). Returns how many were repeats."""
    repeats = 0
    for offer in offers:
        if offer.key in seen:
            result.skipped.append(f"{offer.key}{LISTED_TWICE}")
            repeats += 1
            continue
        seen.add(offer.key)
        result.offers.append(offer)
    return repeats
