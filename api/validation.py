"""Bad input is a 422 naming the field, whatever the input was.

FastAPI's own 422 echoes every rejected value (`input`, `ctx`) through the strict JSON encoder. Python's
json accepts `NaN` and `Infinity` literals in a body, so a NaN in any field that failed validation made
the 422 itself unencodable: a 500. So did a Decimal of 100,000 digits (more than an int may have as
text) and a value nested 900 deep (the recursive encoder ran out of stack). The echo is made safe here
first: non-finite numbers become strings, anything else JSON cannot hold becomes its `str`, and long or
deep values are cut short (the echo is a hint for a person, not a copy of the request).

Datetime ranges live here too: a datetime near year 1 or 9999 overflows as soon as it is converted to
UTC or moved by a day, so query bounds are checked against a sane window before any arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

__all__ = [
    "EARLIEST",
    "LATEST",
    "FieldError",
    "aware_in_range",
    "error_field",
    "safe_echo",
    "validation_body",
]

# Market data starts in this century; a bound outside it is a typo or a probe, never a query.
from tracker.clock import EARLIEST, LATEST, in_service_range

_ECHO_DEPTH = 6  # a job's hf_config is 2-3 levels deep; deeper echoes are elided
_ECHO_ITEMS = 50
_ECHO_CHARS = 500
_ECHO_INT_BITS = 256  # an int of 4,300+ digits cannot even be turned into text; long ones are elided
_LOCATIONS = frozenset({"body", "query", "path", "header", "cookie"})


class FieldError(ValueError):
    """Bad input in one named field: a 422 `{"detail": message, "field": field}`."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def _text(value: str) -> str:
    return value if len(value) <= _ECHO_CHARS else value[:_ECHO_CHARS] + f"… ({len(value):,} characters)"


def safe_echo(value: Any, depth: int = 0) -> Any:
    """`value` as something `json.dumps(allow_nan=False)` always encodes, small and shallow."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= _ECHO_INT_BITS else f"<an integer of {value.bit_length():,} bits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)  # 'nan', 'inf', '-inf'
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, Decimal):
        return _text(str(value))  # exact, and never an int too long to print
    if isinstance(value, datetime):
        return value.isoformat()
    if depth >= _ECHO_DEPTH and isinstance(value, Mapping | Sequence | set | frozenset):
        return "…"
    if isinstance(value, Mapping):
        items = list(value.items())
        echoed = {_text(str(k)): safe_echo(v, depth + 1) for k, v in items[:_ECHO_ITEMS]}
        if len(items) > _ECHO_ITEMS:
            echoed["…"] = f"{len(items) - _ECHO_ITEMS} more"
        return echoed
    if isinstance(value, Sequence | set | frozenset) and not isinstance(value, bytes | bytearray):
        seq = list(value)
        out = [safe_echo(v, depth + 1) for v in seq[:_ECHO_ITEMS]]
        return [*out, f"… {len(seq) - _ECHO_ITEMS} more"] if len(seq) > _ECHO_ITEMS else out
    return _text(str(value))  # exceptions in `ctx`, bytes, enums: their text is what a person needs


def error_field(loc: Sequence[Any]) -> str | None:
    """('body', 'hf_config', 'layers') -> 'hf_config.layers'; ('query', 'pricing', 0) -> 'pricing[0]'."""
    parts = list(loc)
    where = parts.pop(0) if parts and parts[0] in _LOCATIONS else None
    if not parts:
        return "body" if where == "body" else None  # the body as a whole (not an object, not JSON)
    field = ""
    for part in parts:
        field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
    return field


def validation_body(errors: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """FastAPI's 422 shape (`detail`: the list of errors) made encodable, plus the first error's field."""
    detail = [{str(k): safe_echo(v) for k, v in error.items()} for error in errors]
    first = errors[0] if errors else {}
    # A JSON syntax error's loc is the character offset, not a field.
    field = "body" if first.get("type") == "json_invalid" else error_field(first.get("loc", ()))
    return {"detail": detail, "field": field}


def aware_in_range(value: datetime, field: str) -> datetime:
    """`value` if it has a timezone and lies in [EARLIEST, LATEST); else FieldError naming `field`."""
    if value.tzinfo is None:
        raise FieldError(f"{field} must include a timezone (e.g. 2026-01-01T00:00:00Z)", field)
    if not in_service_range(value):
        raise FieldError(
            f"{field} must be between {EARLIEST.date()} and {LATEST.date()} (UTC), got {value.isoformat()}", field
        )
    return value
