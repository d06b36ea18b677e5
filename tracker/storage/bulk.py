"""Bulk row writes: COPY on Postgres, executemany elsewhere.

A 20,000-offer first scrape is the heaviest write the tracker does. Postgres `COPY` takes it in a
fraction of a second inside the ingest transaction; the ORM's INSERT … RETURNING path took seconds
(it splits rows by which keys are None and re-parses huge SQL pages). Values go in as the columns'
Python types (tz-aware UTC datetimes, Decimals); JSON columns are serialised here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import chain, islice
from typing import Any

from sqlalchemy import JSON, Column, MetaData, Table, insert
from sqlalchemy.orm import DeclarativeBase, Session


def table_of(model: type[DeclarativeBase]) -> Table:
    table = model.__table__
    assert isinstance(table, Table)  # a declarative model maps exactly one table
    return table


# Rows per executemany on the portable path: the rows are built from the caller's iterable one chunk at a
# time, so a 200,000-offer first batch holds a few thousand row dicts, not a dict per offer at once.
INSERT_CHUNK = 5_000


def insert_rows(session: Session, model: type[DeclarativeBase], rows: Iterable[dict[str, Any]]) -> None:
    """Insert rows (all with the same keys) of `model`'s table in the session's transaction. `rows` is read
    once, as it is written (a generator keeps a large batch's rows from all being alive together)."""
    it = iter(rows)
    first = next(it, None)
    if first is None:
        return
    every = chain((first,), it)
    dialect = session.connection().dialect.name
    if dialect not in TUPLE_DIALECTS:
        statement = insert(table_of(model))
        while chunk := list(islice(every, INSERT_CHUNK)):
            session.execute(statement, chunk)
        return
    columns = list(first)
    insert_tuples(session, model, columns, ([row[c] for c in columns] for row in every))


# Where rows go to the driver as tuples: COPY on Postgres, the DB-API's executemany on SQLite.
TUPLE_DIALECTS = frozenset({"postgresql", "sqlite"})


def insert_tuples(
    session: Session, model: type[DeclarativeBase], columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    """`insert_rows` for rows given as values in `columns`' order: on Postgres COPYed as they are, without
    the dict per row (a first 200,000-offer batch writes one row per offer)."""
    table = table_of(model)
    dialect = session.connection().dialect.name
    if dialect == "sqlite":
        _executemany(session, table, columns, rows)
        return
    if dialect not in TUPLE_DIALECTS:
        insert_rows(session, model, (dict(zip(columns, row, strict=True)) for row in rows))
        return
    json_at = [i for i, c in enumerate(columns) if isinstance(table.c[c].type, JSON)]
    copy_rows(session, table, columns, (_json_text(row, json_at) for row in rows) if json_at else rows)


def _json_text(row: Sequence[Any], at: Sequence[int]) -> list[Any]:
    out = list(row)
    for i in at:
        if out[i] is not None:
            out[i] = json.dumps(out[i])
    return out


def _executemany(session: Session, table: Table, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """SQLite: the rows through the driver's executemany, INSERT_CHUNK at a time, each value through its
    column type's own bind processor (so stored exactly as an ORM or Core insert stores it). Core's
    executemany built a parameter dict per row and ran its processors through it: at 200,000 offers, two
    thirds of a first batch's writes were that bookkeeping, not SQLite."""
    connection = session.connection()
    dialect = connection.dialect
    quote = dialect.identifier_preparer.quote
    found = [table.c[c].type.dialect_impl(dialect).bind_processor(dialect) for c in columns]
    processors = [(i, p) for i, p in enumerate(found) if p is not None]  # most columns have none
    sql = (
        f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) "
        f"VALUES ({', '.join('?' * len(columns))})"
    )
    cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    every = iter(rows)
    try:
        while chunk := list(islice(every, INSERT_CHUNK)):
            cursor.executemany(sql, [_processed(row, processors) for row in chunk])
    finally:
        cursor.close()


def _processed(row: Sequence[Any], processors: Sequence[tuple[int, Any]]) -> list[Any]:
    out = list(row)
    for i, process in processors:
        out[i] = process(out[i])
    return out


def copy_rows(session: Session, table: Table, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Postgres only: COPY `rows` (each its values in `columns`' order, a JSON column's as JSON text) into
    `table` in the session's transaction. The rows' shape is the caller's: building a list per row straight
    from its source skips the dict per row that `insert_rows` takes (a fifth of a first 200,000-offer batch)."""
    cursor = session.connection().connection.driver_connection.cursor()  # type: ignore[union-attr]
    names = ", ".join(f'"{c}"' for c in columns)
    with cursor.copy(f'COPY "{table.name}" ({names}) FROM STDIN') as copy:
        for row in rows:
            copy.write_row(row)


def staging_table(
    session: Session, name: str, like: Table, columns: Sequence[str], extra: Sequence[Column[Any]]
) -> Table:
    """Postgres only: an empty temporary table `name` in the session's transaction, with `like`'s `columns`
    (their types; no constraints, no indexes) and `extra`, for rows COPYed in and applied by set-based SQL.

    Temporary: private to the connection and written without WAL; ON COMMIT DROP, and a rollback undoes
    its creation, so a failed ingest leaves nothing behind. Drop it when done (`table.drop`), so a second
    batch in the same transaction can stage under the same name (one name keeps SQLAlchemy's compiled
    statement cache to one entry per statement)."""
    table = Table(
        name,
        MetaData(),
        *(Column(c, like.c[c].type) for c in columns),
        *extra,
        prefixes=["TEMPORARY"],
        postgresql_on_commit="DROP",
    )
    table.create(session.connection())
    return table


def upsert_rows(
    session: Session,
    model: type[DeclarativeBase],
    rows: Sequence[dict[str, Any]],
    conflict: Sequence[str],
    update: Sequence[str],
) -> None:
    """Insert rows of `model`, updating `update` where a row with the same `conflict` columns (a unique
    constraint) exists: `INSERT … ON CONFLICT DO UPDATE`, so two writers of the same key never collide
    (the loser of a read-then-insert race would get an IntegrityError instead)."""
    if not rows:
        return
    table = table_of(model)
    dialect = session.connection().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as dialect_insert  # type: ignore[assignment]
    else:
        raise NotImplementedError(f"no upsert for {dialect}")
    stmt = dialect_insert(table)
    stmt = stmt.on_conflict_do_update(
        index_elements=list(conflict), set_={c: getattr(stmt.excluded, c) for c in update}
    )
    session.execute(stmt, list(rows))
