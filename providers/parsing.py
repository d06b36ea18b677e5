"""Value parsing shared by provider adapters: numbers as Decimal with readable schema errors, unit
conversions, and the normalised spellings of regions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from providers.contract import ProviderError, ScrapeResult

__all__ = [
    "DROP_MARK",
    "as_list",
    "cents_to_dollars",
    "dropping",
    "gigabytes",
    "memory_in_name",
    "parse_money",
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


# --- money strings ------------------------------------------------------------------------------------

# ISO 4217 codes a price text may name: the currencies the rate source lists (the ECB's 30 and USD) and
# those the dollar-style symbols below stand for. Any other three letters are refused, not passed on.
ISO_CODES = frozenset(
    {
        "USD",
        "EUR",
        "GBP",
        "CHF",
        "JPY",
        "CNY",
        "CAD",
        "AUD",
        "NZD",
        "HKD",
        "SGD",
        "SEK",
        "NOK",
        "DKK",
        "PLN",
        "CZK",
        "HUF",
        "RON",
        "BGN",
        "ISK",
        "TRY",
        "ILS",
        "INR",
        "IDR",
        "KRW",
        "MYR",
        "PHP",
        "THB",
        "ZAR",
        "BRL",
        "MXN",
        "TWD",
    }
)
# Markers that name one currency. A bare "$" (USD, CAD, AUD, HKD, ...) or "¥" (JPY, CNY) names none: only
# an adapter whose provider documents what its "$" is may say so (`dollar=`).
_MARKERS = {
    "€": "EUR",
    "£": "GBP",
    "₹": "INR",
    "₩": "KRW",
    "₺": "TRY",
    "₪": "ILS",
    "฿": "THB",
    "₱": "PHP",
    "ZŁ": "PLN",
    "US$": "USD",
    "U$S": "USD",
    "CA$": "CAD",
    "C$": "CAD",
    "A$": "AUD",
    "AU$": "AUD",
    "HK$": "HKD",
    "NZ$": "NZD",
    "S$": "SGD",
    "SG$": "SGD",
    "R$": "BRL",
    "MX$": "MXN",
    "NT$": "TWD",
}
_AMBIGUOUS = frozenset({"$", "¥", "KR", "FR", "FR."})
_PER_HOUR = re.compile(r"\s*(?:/\s*(?:h|hr|hour)|per\s+hour)\s*$", re.IGNORECASE)
# One run of ASCII digits with separators, and the text around it (the currency markers).
_MONEY = re.compile(r"(?P<pre>[^0-9]*?)\s*(?P<num>[0-9](?:[0-9.,'\u00a0\u202f ]*[0-9])?)\s*(?P<post>[^0-9]*)")
_GROUPED = re.compile(r"[0-9]{1,3}(?:[,.'\u00a0\u202f ][0-9]{3})+")


def parse_money(value: Any, where: str, *, dollar: str | None = None) -> tuple[Decimal, str | None]:
    """A price as an amount and the ISO code its text names (None: it names none, the provider's documented
    currency applies). The one reader of money strings for every adapter:

    * markers before or after the number: a symbol ("€", "£"), a prefixed dollar ("CA$", "A$", "HK$", "US$")
      or an ISO code ("EUR", "usd"); a bare "$" only where the adapter passes what it means (`dollar`);
    * decimal point or decimal comma ("1,50 €" is 1.50), thousands separators (",", ".", "'", spaces) in
      groups of three ("1.234,56", "1,234.56", "12 000");
    * refused (ProviderError naming `where`): two different currencies, an unknown or ambiguous marker,
      a comma that may be either separator ("1,500"), non-ASCII digits, a sign, more than one number."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise ProviderError(f"schema changed: expected a price at {where}, got {type(value).__name__}")
    if not isinstance(value, str):
        return to_decimal(value if not isinstance(value, Decimal) else str(value), where), None
    match = _MONEY.fullmatch(_PER_HOUR.sub("", value.strip()))
    if not match:
        raise ProviderError(f"unreadable price {value!r} at {where}")
    codes = {_marker(m, value, where, dollar) for m in (match["pre"].strip(), match["post"].strip()) if m}
    if len(codes) > 1:
        raise ProviderError(f"price {value!r} at {where} names two currencies ({', '.join(sorted(codes))})")
    return to_decimal(_plain_number(match["num"], value, where), where), (codes.pop() if codes else None)


def _marker(text: str, value: str, where: str, dollar: str | None) -> str:
    mark = text.upper()
    if mark == "$" and dollar is not None:
        return dollar
    if mark in _MARKERS:
        return _MARKERS[mark]
    if mark in ISO_CODES:
        return mark
    why = "ambiguous" if mark in _AMBIGUOUS else "unknown"
    raise ProviderError(f"price {value!r} at {where}: currency {text!r} is {why}; refused rather than guessed")


def _plain_number(num: str, value: str, where: str) -> str:
    """'1.234,56' → '1234.56'; '1,50' → '1.50'; '12 000' → '12000'. Raises on an ambiguous or odd form."""
    seps = [c for c in num if not c.isdigit()]
    if not seps:
        return num
    last = max(num.rfind("."), num.rfind(","))
    head, tail = num[:last], num[last + 1 :]
    mark = num[last]
    if _GROUPED.fullmatch(num) and len(set(seps)) == 1 and (len(seps) > 1 or mark not in ".,"):
        return re.sub(r"[^0-9]", "", num)  # "1,234,567", "12 000": thousands only
    if not tail.isdigit() or (head and not (head.isdigit() or _GROUPED.fullmatch(head))):
        raise ProviderError(f"unreadable price {value!r} at {where}")
    if head and not head.isdigit() and mark in {c for c in head if not c.isdigit()}:
        raise ProviderError(f"unreadable price {value!r} at {where}")  # "1.234.56": no decimal part
    if mark == "," and len(tail) == 3 and head.isdigit() and head != "0":
        raise ProviderError(f"price {value!r} at {where}: '{num}' is a thousands or a decimal comma; refused")
    return re.sub(r"[^0-9]", "", head) + "." + tail


# --- one malformed object --------------------------------------------------------------------------------

# What a malformed value inside one object raises while it is read: our own schema errors, and what Python
# raises on a value of the wrong kind (a None where a dict was, a string where a number was, a NaN in
# arithmetic). Any of them drops that object only.
# How a dropped object's reason reads ("offers[3]: dropped, ..."), so reports can count them apart.
DROP_MARK = ": dropped, "
_MALFORMED = (ProviderError, ArithmeticError, TypeError, ValueError, KeyError, AttributeError, IndexError)


@contextmanager
def dropping(result: ScrapeResult, where: str) -> Iterator[None]:
    """Read one object of a list (an offer, a host, a plan) inside this block: if anything in it is
    malformed, the object is dropped with its reason (`result.skipped`, counted by ingest as invalid and
    shown by `doctor`) and whatever it had added to `result.offers` is taken back; the rest of the batch
    goes on. The envelope (the list itself, a page's shape) is read outside such a block, so a malformed
    envelope still fails the run, as it should. The one rule every list-shaped adapter follows."""
    before = len(result.offers)
    try:
        yield
    except _MALFORMED as exc:
        del result.offers[before:]
        reason = str(exc) if isinstance(exc, ProviderError) else f"{type(exc).__name__}: {exc}"
        result.skipped.append(f"{where}{DROP_MARK}{reason[:300]}")
