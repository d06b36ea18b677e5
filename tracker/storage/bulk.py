"""Bulk row writes: COPY on Postgres, executemany elsewhere.

A 20,000-offer first scrape is the heaviest write the tracker does. Postgres `COPY` takes it in a
fraction of a second inside the ingest transaction; the ORM's INSERT … RETURNING path took seconds
(it splits rows by which keys are None and re-parses huge SQL pages). Values go in as the columns'
Python types (tz-aware UTC datetimes, Decimals); JSON columns are serialised here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import JSON, Table, insert
from sqlalchemy.orm import DeclarativeBase, Session


def insert_rows(session: Session, model: type[DeclarativeBase], rows: Sequence[dict[str, Any]]) -> None:
    """Insert rows (all with the same keys) of `model`'s table in the session's transaction."""
    if not rows:
        return
    table = model.__table__
    assert isinstance(table, Table)  # a declarative model maps exactly one table
    connection = session.connection()
    if connection.dialect.name != "postgresql":
        session.execute(insert(table), list(rows))
        return
    columns = list(rows[0])
    json_columns = {c for c in columns if isinstance(table.c[c].type, JSON)}
    cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    names = ", ".join(f'"{c}"' for c in columns)
    with cursor.copy(f'COPY "{table.name}" ({names}) FROM STDIN') as copy:
        for row in rows:
            copy.write_row(
                [json.dumps(row[c]) if c in json_columns and row[c] is not None else row[c] for c in columns]
            )


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
    table = model.__table__
    assert isinstance(table, Table)
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
