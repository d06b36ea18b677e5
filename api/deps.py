"""Request-scoped dependencies: a database session per request, settings."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Request
from sqlalchemy.orm import Session

from tracker.config import Settings
from tracker.storage.engine import session_scope


def db_session(request: Request) -> Iterator[Session]:
    with session_scope(request.app.state.engine) as session:
        yield session


def settings(request: Request) -> Settings:
    return request.app.state.settings
