"""Request-scoped dependencies: a database session per request, settings, the clock and the live-offer table.

The clock and the live table belong to the app (`create_app(clock=..., live=...)`): a test gives its app a
fake clock and gets a fresh table with every app, instead of patching `utcnow` into route modules or
emptying a process-wide cache. The two are `async` dependencies so a cached answer is still served on the
event loop without a thread hop (FastAPI runs plain `def` dependencies in the threadpool).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from tracker.config import Settings
from tracker.market.live import LiveOffers
from tracker.storage.engine import session_scope


def db_session(request: Request) -> Iterator[Session]:
    with session_scope(request.app.state.engine) as session:
        yield session


# The session's transaction commits when the endpoint returns, before the response is sent: a 2xx means
# the write is durable, and a commit that fails is the error handler's 503, never a 2xx. FastAPI's default
# scope for a yield dependency ("request") exits after the response is sent; a create answered 201 and a
# GET straight after it found nothing (68 times in 100 on SQLite), and a failed commit still said 201.
DbSession = Annotated[Session, Depends(db_session, scope="function")]


def settings(request: Request) -> Settings:
    current: Settings = request.app.state.settings
    return current


async def clock(request: Request) -> Callable[[], datetime]:
    """The app's clock, for an endpoint that reads the time more than once (before and after a send)."""
    current: Callable[[], datetime] = request.app.state.clock
    return current


async def now(request: Request) -> datetime:
    """The instant this request is answered for: read once, so every part of the answer agrees."""
    moment: datetime = request.app.state.clock()
    return moment


async def live_offers(request: Request) -> LiveOffers:
    """The app's live-offer table and memo of derived answers (tracker.market.live)."""
    table: LiveOffers = request.app.state.live
    return table


Clock = Annotated[Callable[[], datetime], Depends(clock)]
Now = Annotated[datetime, Depends(now)]
Live = Annotated[LiveOffers, Depends(live_offers)]
