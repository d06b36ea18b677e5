"""Value parsing shared by provider adapters: numbers as Decimal with readable schema errors, unit
conversions, and the normalised spellings of regions."""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from providers.contract import ProviderError

__all__ = [
    "as_list",
    "cents_to_dollars",
    "gigabytes",
    "memory_in_name",
    "region_codes",
    "slug",
    "tidy_decimal",
    "to_decimal",
    "to_optional_decimal",
]

_TWO_PLACES = Decimal("0.01")


def to_decimal(value: Any, where: str) -> Decimal:
    """A JSON number or numeric string as a Decimal; anything else means the schema changed."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ProviderError(f"schema changed: expected a number at {where}, got {type(value).__name__}")
    try:
        return Decimal(str(value).strip())
    except ArithmeticError:
        raise ProviderError(f"schema changed: {value!r} at {where} is not a number") from None


def to_optional_decimal(value: Any, where: str, *, blank_is_none: bool = False) -> Decimal | None:
    """`to_decimal`, with None (and, when `blank_is_none`, an empty string) read as absent."""
    if value is None or (blank_is_none and value == ""):
        return None
    return to_decimal(value, where)


def as_list(value: Any, what: str, where: str | None = None) -> list[Any]:
    """`value`, which must be a JSON list; anything else means the schema changed."""
    if not isinstance(value, list):
        raise ProviderError(f"schema changed: {what} is not a list" + (f" at {where}" if where else ""))
    return value


def tidy_decimal(value: Decimal) -> Decimal:
    """Two decimals at most, no trailing zeros, never exponent notation: 640/8 → 80, 1.50 → 1.5."""
    rounded = value.quantize(_TWO_PLACES)
    if rounded == rounded.to_integral_value():
        return rounded.quantize(Decimal(1))
    return rounded.normalize()


def gigabytes(amount: Decimal | None, per_gb: Decimal | int) -> Decimal | None:
    """`amount` of a smaller unit (`per_gb` of them make one GB) in GB to two decimals; None when missing or 0."""
    return (amount / per_gb).quantize(_TWO_PLACES) if amount else None


def cents_to_dollars(cents: Decimal) -> Decimal:
    return cents / 100


def slug(*parts: Any) -> str:
    """The non-empty parts joined, lower case, every run of other characters a single '-':
    ('United States', 'Texas', 'Dallas') → 'united-states-texas-dallas'."""
    text = "-".join(str(p) for p in parts if p)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def region_codes(regions: Iterable[Any]) -> list[str]:
    """Region names as sorted, distinct codes in the one region form (`slug`: 'new_york' → 'new-york');
    blank ones are dropped."""
    return sorted({code for region in regions if (code := slug(region))})


_MEMORY_TOKEN = re.compile(r"^(\d+(?:\.\d+)?)GB?$", re.IGNORECASE)


def memory_in_name(name: str) -> Decimal | None:
    """Per-GPU GB written in a GPU name: 'H100_SXM5_80GB', 'H100-80G-PCIe', 'RTX 4090 PCIe 24 GB' → 80, 80, 24.

    The first token is the model ("A100", "4090"), never a size; a name without a size gives None.
    """
    tokens = [t for t in re.split(r"[-_\s]+", re.sub(r"(\d)\s+(GB?)\b", r"\1\2", name.strip(), flags=re.I)) if t]
    for token in tokens[1:]:
        if match := _MEMORY_TOKEN.match(token):
            return Decimal(match[1])
    return None
