"""Hostile literals for fuzzing the API: values that break naive parsers, number types and recursion."""

from __future__ import annotations

import json

DEPTH = 900

DATETIMES = [
    "0001-01-01T00:00:00+05:00",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00",
    "9999-12-31T23:59:59-05:00",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59.999999+14:00",
]
# Raw JSON text: NaN and Infinity are not JSON, but Python's json (and so FastAPI) accepts them.
BODY_VALUES = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e308",
    "-1e308",
    "1" + "0" * 400,  # 10**400: an integer no float can hold
    "1" + "0" * 5000,  # past the digits Python will parse (400, not 500)
    "1e-300",
    "5e-324",
    "[" * DEPTH + "]" * DEPTH,
    "[" * 5000 + "]" * 5000,  # past the parser's recursion limit (400)
    '{"a": ' * DEPTH + "1" + "}" * DEPTH,
    json.dumps("x" * 100_000),
    json.dumps("9" * 100_000),
    *(json.dumps(d) for d in DATETIMES),
]
QUERY_VALUES = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e308",
    "1" + "0" * 400,
    "[" * DEPTH,
    "x" * 8_000,  # URLs are capped far below a body (httpx refuses 64 KiB; servers stop near 8 KiB)
    *DATETIMES,
]
