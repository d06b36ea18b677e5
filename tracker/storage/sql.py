"""SQL that the two backends spell differently: the only place that knows it.

Everything else builds portable expressions with these helpers, so a query reads the same on SQLite
and Postgres and this module is what to check when adding a backend.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Engine, extract, func, literal_column
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

__all__ = ["epoch_us", "seconds_between"]


class epoch_us(FunctionElement[int]):
    """Whole microseconds since the Unix epoch of a UTC datetime column, computed exactly in SQL.

    A plain integer bypasses the UTCDateTime decorator (and datetime objects) on the way out, and
    keeps the stored microseconds: SQLite's julianday() would round them to milliseconds.
    """

    type = BigInteger()
    name = "epoch_us"
    inherit_cache = True


@compiles(epoch_us)
def _epoch_us_default(element: epoch_us, compiler: Any, **kw: Any) -> str:  # Postgres: numeric, exact
    return f"CAST(EXTRACT(EPOCH FROM {compiler.process(element.clauses, **kw)}) * 1000000 AS BIGINT)"


@compiles(epoch_us, "sqlite")
def _epoch_us_sqlite(element: epoch_us, compiler: Any, **kw: Any) -> str:
    # Stored as naive UTC text 'YYYY-MM-DD HH:MM:SS[.ffffff]': the whole seconds (without the fraction,
    # which strftime would round to milliseconds, carrying .9995 into the next second), plus the digits
    # after the dot.
    col = compiler.process(element.clauses, **kw)
    seconds = f"CAST(strftime('%s', substr({col}, 1, 19)) AS INTEGER)"
    return f"({seconds} * 1000000 + CAST(substr({col} || '000000', 21, 6) AS INTEGER))"


def seconds_between(engine: Engine, start: Any, stop: Any) -> Any:
    """stop − start in seconds, as SQL (the two backends spell interval arithmetic differently)."""
    if engine.dialect.name == "sqlite":
        return (func.julianday(stop) - func.julianday(start)) * literal_column("86400.0")
    return extract("epoch", stop - start)
