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
    "reservation_term",
    "slug",
    "term_hours",
    "tidy_decimal",
    "to_decimal",
    "to_optional_decimal",
    "upstream_provider",
]

_TWO_PLACES = Decimal("0.01")
_TOO_LARGE = Decimal("1e18")


def to_decimal(value: Any, where: str) -> Decimal:
    """A JSON number or numeric string as a Decimal; anything else means the schema changed."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ProviderError(f"schema changed: expected a number at {where}, got {type(value).__name__}")
    try:
        number = Decimal(str(value).strip())
    except ArithmeticError:
        raise ProviderError(f"schema changed: {value!r} at {where} is not a number") from None
    # "NaN"/"Infinity" (strings, or the bare NaN that JSON decoding accepts) are no amount: a NaN would
    # raise InvalidOperation at the first comparison (`price <= 0`) and crash the parser instead.
    if not number.is_finite():
        raise ProviderError(f"schema changed: {value!r} at {where} is not a finite number")
    # No price, count or size we read comes near 1e18 (an exabyte in bytes); past the 28 digits of the
    # decimal context, `quantize` (`gigabytes`, `tidy_decimal`) would raise InvalidOperation instead.
    if abs(number) >= _TOO_LARGE:
        raise ProviderError(f"schema changed: {value!r} at {where} is out of range")
    return number


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


# A commitment as providers write it: "1mo", "3 months", "12-month", "1yr", "3 years", "7d", "2w", "P1Y".
_TERM = re.compile(
    r"^p?(\d+(?:\.\d+)?)\s*-?\s*(d|days?|w|wks?|weeks?|mo|mos|mon|months?|m|y|yr|yrs|years?)$", re.IGNORECASE
)
_TERM_UNIT = {"d": "d", "w": "w", "m": "mo", "y": "y"}
_HOURS_PER = {"d": Decimal(24), "mo": Decimal(730), "y": Decimal(8760)}  # a month is 1/12 of a 365-day year


def reservation_term(value: Any, where: str = "term") -> str:
    """A commitment term in the one spelling every offer uses: whole days as "7d", months as "1mo", "3mo",
    "6mo", whole years as "1y", "3y" ("12 months" is "1y", "36mo" is "3y", "2w" is "14d").

    The term is part of a reserved price (a 1-year and a 3-year rate are different prices), so an
    unreadable one is a ProviderError naming `where`, never a guess."""
    text = str(value).strip().lower().replace("_", " ") if isinstance(value, str | int) else ""
    match = _TERM.match(text)
    if not match or Decimal(match[1]) <= 0 or Decimal(match[1]) != Decimal(match[1]).to_integral_value():
        raise ProviderError(f"unreadable reservation term {value!r} at {where}")
    amount, unit = int(Decimal(match[1])), _TERM_UNIT[match[2][0]]
    if unit == "w":
        return f"{amount * 7}d"
    if unit == "mo" and amount % 12 == 0:
        return f"{amount // 12}y"
    return f"{amount}{unit}"


def term_hours(term: str) -> Decimal:
    """Hours in a term spelled by `reservation_term` ("7d" → 168, "1mo" → 730, "1y" → 8760): what turns
    a price for a whole block (GPUs × term) into $/GPU-hour."""
    match = re.fullmatch(r"(\d+)(d|mo|y)", term)
    if not match:
        raise ProviderError(f"not a normalised reservation term: {term!r}")
    return int(match[1]) * _HOURS_PER[match[2]]


# Aggregators' names for upstream clouds that we know under another name (our registry's): DataCrunch
# became Verda; "lambda" is Lambda Labs. Anything else is kept as the aggregator spells it, normalised.
UPSTREAM_ALIASES = {"datacrunch": "verda", "lambda": "lambdalabs", "lambdacloud": "lambdalabs"}


def upstream_provider(raw: Any) -> str | None:
    """The provider whose machine an aggregator resells, as one name: lower case, letters and digits only
    ("Massed_Compute" → "massedcompute"), with `UPSTREAM_ALIASES` applied so that an upstream we also
    scrape directly carries our own provider name (which is what counting a machine once relies on).
    None when the aggregator names none."""
    name = re.sub(r"[^a-z0-9]+", "", str(raw).lower()) if raw is not None else ""
    return UPSTREAM_ALIASES.get(name, name) or None
