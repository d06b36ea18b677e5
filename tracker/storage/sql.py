"""SQL that the two backends spell differently: the only place that knows it.

Everything else builds portable expressions with these helpers, so a query reads the same on SQLite
and Postgres and this module is what to check when adding a backend.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any, TypeAlias, TypeVar

import numpy as np
from sqlalchemy import (
    ARRAY,
    BigInteger,
    ColumnClause,
    Engine,
    Float,
    LargeBinary,
    Select,
    String,
    Table,
    any_,
    bindparam,
    cast,
    extract,
    func,
    literal,
    literal_column,
    select,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.sql.visitors import InternalTraversal, replacement_traverse

__all__ = [
    "IN_CHUNK",
    "LIKE_ESCAPE",
    "epoch_us",
    "json_members",
    "json_number",
    "json_parsed_once",
    "json_text",
    "like_escape",
    "read_columns",
    "read_columns_by",
    "seconds_between",
    "select_in",
    "starts_with",
]

AnySelect: TypeAlias = "Select[*tuple[Any, ...]]"  # a SELECT of any columns (read_columns)

# The escape character of every LIKE pattern we build from user text (both backends accept ESCAPE).
LIKE_ESCAPE = "/"


def like_escape(text: str) -> str:
    """`text` as a LIKE pattern that matches only itself: `%`, `_` and the escape character escaped.
    Use with `escape=LIKE_ESCAPE`; without it a region filter `us_east` would also match `us-east`."""
    return text.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2).replace("%", LIKE_ESCAPE + "%").replace("_", LIKE_ESCAPE + "_")


def starts_with(column: ColumnElement[str] | InstrumentedAttribute[str], prefix: str) -> ColumnElement[bool]:
    """`column` begins with `prefix`, taken literally (no wildcards), as SQL on either backend."""
    return column.like(like_escape(prefix) + "%", escape=LIKE_ESCAPE)


class epoch_us(FunctionElement[int]):
    """Whole microseconds since the Unix epoch of a UTC datetime column, computed exactly in SQL.

    A plain integer bypasses the UTCDateTime decorator (and datetime objects) on the way out, and
    keeps the stored microseconds: SQLite's julianday() would round them to milliseconds.
    """

    type = BigInteger()
    name = "epoch_us"
    inherit_cache = True


@compiles(epoch_us)
def _epoch_us_default(element: FunctionElement[Any], compiler: Any, **kw: Any) -> str:  # Postgres: numeric, exact
    return f"CAST(EXTRACT(EPOCH FROM {compiler.process(element.clauses, **kw)}) * 1000000 AS BIGINT)"


@compiles(epoch_us, "sqlite")
def _epoch_us_sqlite(element: epoch_us, compiler: Any, **kw: Any) -> str:
    # Stored as naive UTC text 'YYYY-MM-DD HH:MM:SS[.ffffff]': the whole seconds (without the fraction,
    # which strftime would round to milliseconds, carrying .9995 into the next second), plus the digits
    # after the dot.
    col = compiler.process(element.clauses, **kw)
    seconds = f"CAST(strftime('%s', substr({col}, 1, 19)) AS INTEGER)"
    return f"({seconds} * 1000000 + CAST(substr({col} || '000000', 21, 6) AS INTEGER))"


def _sqlite_instants_us(texts: Sequence[str]) -> np.ndarray:
    """SQLite's stored UTC text ('YYYY-MM-DD HH:MM:SS[.ffffff]', naive UTC) as int64 microseconds since the
    epoch, parsed by numpy in C (its date functions cost about twice the read); '' (NULL) as -1."""
    parsed = np.array(texts, dtype="datetime64[us]").view(np.int64)  # '' reads as NaT
    us: np.ndarray = np.where(parsed == np.iinfo(np.int64).min, -1, parsed)
    return us


def read_columns(session: Session, stmt: AnySelect, kinds: Sequence[str]) -> list[np.ndarray]:
    """The columns of `stmt` as numpy arrays, read in bulk, by kind: "int" (int64, NULL as -1), "float"
    (float64, NULL as NaN) or "instant" (a UTC datetime column selected as it is: int64 microseconds since
    the epoch, as `epoch_us` computes them; NULL as -1).

    On Postgres each column is aggregated in the database into one bytea of its big-endian binary values
    (`int8send`, `float8send`, `timestamptz_send`: microseconds since 2000-01-01, with no numeric
    arithmetic per value as EXTRACT(EPOCH) does), by `string_agg` over the rows: one aggregate pass feeds
    every column the same row at a time, so the columns stay aligned. They are read with np.frombuffer, no
    Python object per value: a year of one card's history (185,000 price rows x 4 columns at 10x) took
    0.2 s in the driver's row tuples alone. On SQLite each column is joined into one text in the database
    (`group_concat`) and parsed by numpy; instants are SQLite's stored text (`_sqlite_instants_us`)."""
    grouped = _read(session, stmt, kinds, by=False)
    return grouped.get(None) or [_empty(kind) for kind in kinds]


def read_columns_by(session: Session, stmt: AnySelect, kinds: Sequence[str]) -> dict[Any, list[np.ndarray]]:
    """`read_columns` per value of `stmt`'s first column (a key such as a provider): one query, a row of
    arrays per key (`kinds` are those of the other columns). Keys with no rows are absent."""
    return _read(session, stmt, kinds, by=True)


def _read(session: Session, stmt: AnySelect, kinds: Sequence[str], *, by: bool) -> dict[Any, list[np.ndarray]]:
    if len(kinds) + by != len(stmt.selected_columns) or not set(kinds) <= {"int", "float", "instant"}:
        raise ValueError(f"one kind of int, float or instant per column, got {kinds!r}")
    sub = stmt.subquery()
    key, *cols = sub.c if by else (None, *sub.c)
    pg = session.connection().dialect.name == "postgresql"
    if pg:
        sep = literal(b"", LargeBinary)
        aggs = [func.string_agg(_binary_pg(c, k), sep, type_=LargeBinary) for c, k in zip(cols, kinds, strict=True)]
    else:
        aggs = [func.group_concat(_text_sqlite(c, k), ",") for c, k in zip(cols, kinds, strict=True)]
    # The count tells no rows (every aggregate NULL) from one row whose only value is NULL (SQLite's '').
    query = select(*([key] if by else []), func.count(), *aggs)
    if by:
        query = query.group_by(key)
    out: dict[Any, list[np.ndarray]] = {}
    for row in session.execute(query):
        group, (count, *values) = (row[0], row[1:]) if by else (None, row)
        if count:
            decode = _decode_pg if pg else _decode_sqlite
            out[group] = [decode(value, kind) for value, kind in zip(values, kinds, strict=True)]
    return out


def _empty(kind: str) -> np.ndarray:
    return np.zeros(0, dtype=np.float64 if kind == "float" else np.int64)


def _decode_pg(value: bytes | None, kind: str) -> np.ndarray:
    data = bytes(value or b"")
    if kind == "float":
        floats: np.ndarray = np.frombuffer(data, dtype=">f8").astype(np.float64)
        return floats
    ints: np.ndarray = np.frombuffer(data, dtype=">i8").astype(np.int64)
    if kind == "instant":  # 'infinity' stands for NULL (string_agg would skip a NULL, shifting the rest)
        ints = np.where(ints == _PG_INFINITY, -1, ints + _PG_EPOCH_US)
    return ints


def _decode_sqlite(value: str, kind: str) -> np.ndarray:
    if kind == "instant":
        return _sqlite_instants_us(value.split(","))
    parsed: np.ndarray = np.fromstring(value, dtype=np.float64 if kind == "float" else np.int64, sep=",")
    return parsed


def _text_sqlite(col: ColumnElement[Any], kind: str) -> ColumnElement[Any]:
    """`col` as text group_concat can join, never NULL (group_concat skips a NULL, shifting the rest). A REAL
    reads back as SQLite prints it (15 significant digits: every Numeric(14, 6) price exactly)."""
    if kind == "float":
        return func.coalesce(cast(col, Float), "NaN")
    if kind == "instant":
        return func.coalesce(col, "")
    return func.coalesce(col, -1)


# timestamptz_send's microseconds count from 2000-01-01 UTC; 'infinity' is the largest int64.
_PG_EPOCH_US = 946_684_800_000_000
_PG_INFINITY = np.iinfo(np.int64).max


def _binary_pg(col: ColumnElement[Any], kind: str) -> ColumnElement[Any]:
    """`col` as the 8 big-endian bytes of its binary form, never NULL (read_columns)."""
    if kind == "float":
        return func.float8send(func.coalesce(cast(col, Float), literal_column("'NaN'::float8")))
    if kind == "instant":
        return func.timestamptz_send(func.coalesce(col, literal_column("'infinity'::timestamptz")))
    return func.int8send(func.coalesce(cast(col, BigInteger), -1))


# Bound parameters per IN list on SQLite: under its limit (999 before 3.32) whatever else the query binds.
IN_CHUNK = 900


def select_in(
    session: Session,
    query: AnySelect,
    column: ColumnElement[int] | InstrumentedAttribute[int],
    ids: Collection[int] | None,
) -> list[Any]:
    """The rows of `query` whose `column` is one of `ids` (None: every row): on Postgres one statement binding
    them as an array, however many; elsewhere IN lists of IN_CHUNK (SQLite's limit on bound parameters)."""
    if ids is None:
        return list(session.execute(query))
    if not ids:
        return []
    every = list(ids)
    if session.connection().dialect.name == "postgresql":
        return list(session.execute(query.where(column == any_(bindparam("ids", every, type_=ARRAY(BigInteger()))))))
    chunks = (every[i : i + IN_CHUNK] for i in range(0, len(every), IN_CHUNK))
    return [row for chunk in chunks for row in session.execute(query.where(column.in_(chunk)))]


def seconds_between(engine: Engine, start: Any, stop: Any) -> Any:
    """stop − start in seconds, as SQL (the two backends spell interval arithmetic differently)."""
    if engine.dialect.name == "sqlite":
        return (func.julianday(stop) - func.julianday(start)) * literal_column("86400.0")
    return extract("epoch", stop - start)


_T = TypeVar("_T")
_JSON_KEY = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")


class _json_member(FunctionElement[_T]):
    """One top-level member of a JSON column. The key is part of the statement (and of its cache key),
    never a parameter: only our own attribute names are accepted."""

    inherit_cache = True
    # The key is state beyond the clauses: it must be in the cache key, or two members would share SQL.
    _traverse_internals = [*FunctionElement._traverse_internals, ("key", InternalTraversal.dp_string)]  # noqa: RUF012

    def __init__(self, column: Any, key: str) -> None:
        if not _JSON_KEY.match(key):
            raise ValueError(f"not a JSON member name this module accepts: {key!r}")
        self.key = key
        super().__init__(column)


class json_text(_json_member[str]):
    """A member as SQL text on Postgres (`->>`), as its SQL value on SQLite (`json_extract`): equal to a
    word such as 'verified' on both exactly when the member is that JSON string, so compare it with
    words only (a JSON number or `true` reads as text on one backend and not on the other). One JSON
    lookup, no type test: filters over every live offer use it."""

    type = String()
    name = "json_text"
    inherit_cache = True


class json_number(_json_member[float]):
    """A member as a float when it is a JSON number, else NULL. Typed on purpose: Postgres would fail
    the whole query casting a stray "n/a" to a number."""

    type = Float()
    name = "json_number"
    inherit_cache = True


class json_members(FunctionElement[str]):
    """Several top-level members of a JSON column as one JSON array (text), in the order given, null
    for a missing member: the document is parsed once per row instead of once per member (SQLite's
    json_extract with several paths), and the values keep their JSON types on both backends."""

    type = String()
    name = "json_members"
    inherit_cache = True
    _traverse_internals = [*FunctionElement._traverse_internals, ("keys", InternalTraversal.dp_plain_obj)]  # noqa: RUF012

    def __init__(self, column: Any, keys: tuple[str, ...]) -> None:
        if len(keys) < 2 or not all(_JSON_KEY.match(k) for k in keys):
            raise ValueError(f"json_members takes two or more member names this module accepts: {keys!r}")
        self.keys = tuple(keys)
        super().__init__(column)


@compiles(json_members)
def _json_members_pg(element: json_members, compiler: Any, **kw: Any) -> str:
    # One parse of the document per row: `->` on a json value parses the text again for every member (six
    # members cost ingest's read of 20,000 offers 150 ms; json_to_record 85 ms). json_to_record refuses a
    # scalar or an array, where `->` gave NULL: those read as NULL (no member) through the CASE.
    col, fn = _pg_document(element, compiler, **kw)
    members = ", ".join(f'm."{k}"' for k in element.keys)  # quoted: a member may be named like a keyword
    types = ", ".join(f'"{k}" json' for k in element.keys)
    return (
        f"(CASE WHEN {fn}_typeof({col}) = 'object' THEN "
        f"(SELECT json_build_array({members})::text FROM {fn}_to_record({col}) AS m({types})) END)"
    )


@compiles(json_members, "sqlite")
def _json_members_sqlite(element: json_members, compiler: Any, **kw: Any) -> str:
    col = compiler.process(element.clauses, **kw)
    return f"json_extract({col}, " + ", ".join(f"'$.\"{k}\"'" for k in element.keys) + ")"


def _pg_document(element: FunctionElement[Any], compiler: Any, **kw: Any) -> tuple[str, str]:
    """The document as SQL and the prefix of its functions ("json" or "jsonb"). A jsonb value (a column
    `json_parsed_once` parsed) is read as it is: cast back to json, it would be printed and parsed again."""
    (clause,) = element.clauses
    sql = compiler.process(element.clauses, **kw)
    if isinstance(clause.type, JSONB):
        return f"({sql})", "jsonb"
    return f"({sql})::json", "json"  # the portable JSON column type: json on Postgres


def _pg_member(element: _json_member[Any], compiler: Any, **kw: Any) -> tuple[str, str, str]:
    """The member as a JSON value and as text, and the prefix of the document's functions."""
    col, fn = _pg_document(element, compiler, **kw)
    return f"{col} -> '{element.key}'", f"{col} ->> '{element.key}'", fn


def json_parsed_once(
    columns: Sequence[Any], table: Table, document: str, where: ColumnElement[bool], dialect: str
) -> AnySelect:
    """SELECT `columns` (expressions over `table`) FROM `table` WHERE `where`, with the JSON column `document`
    parsed once per row for every member the columns read.

    On Postgres each `->>` on a json value parses the whole document again: the live table's ~20 members of
    `offers.attributes` took 6.3 s of server time at 200,000 offers. Here `table` is read through a subquery
    that casts the column to jsonb once per row (`OFFSET 0` keeps the planner from folding the cast back into
    every use) and the members are looked up in the parsed value: 1.4 s. SQLite's json_extract parses its
    text quickly: the statement is the plain one there."""
    if dialect != "postgresql":
        return select(*columns).where(where)
    inner = (
        select(*(cast(c, JSONB).label(c.name) if c.name == document else c for c in table.c))
        .where(where)
        .offset(0)
        .subquery(table.name)
    )

    def swap(element: Any, **kw: Any) -> Any:
        if isinstance(element, ColumnClause) and getattr(element, "table", None) is table:
            return inner.c[element.name]
        return None

    def adapted(column: Any) -> Any:
        element: ColumnElement[Any] = column.__clause_element__() if hasattr(column, "__clause_element__") else column
        return replacement_traverse(element, {}, swap)

    return select(*map(adapted, columns))


def _sqlite_member(element: _json_member[Any], compiler: Any, **kw: Any) -> tuple[str, str]:
    col, path = compiler.process(element.clauses, **kw), f"'$.\"{element.key}\"'"
    return f"json_type({col}, {path})", f"json_extract({col}, {path})"


@compiles(json_text)
def _json_text_pg(element: json_text, compiler: Any, **kw: Any) -> str:
    return f"({_pg_member(element, compiler, **kw)[1]})"


@compiles(json_number)
def _json_number_pg(element: json_number, compiler: Any, **kw: Any) -> str:
    member, text, fn = _pg_member(element, compiler, **kw)
    return f"(CASE WHEN {fn}_typeof({member}) = 'number' THEN CAST({text} AS DOUBLE PRECISION) END)"


@compiles(json_text, "sqlite")
def _json_text_sqlite(element: json_text, compiler: Any, **kw: Any) -> str:
    return _sqlite_member(element, compiler, **kw)[1]


@compiles(json_number, "sqlite")
def _json_number_sqlite(element: json_number, compiler: Any, **kw: Any) -> str:
    kind, value = _sqlite_member(element, compiler, **kw)
    return f"(CASE WHEN {kind} IN ('integer', 'real') THEN CAST({value} AS REAL) END)"
