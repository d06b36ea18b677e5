"""The one source of "now", so tests and replays can pin time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


# The instants the service deals in: market data starts this century, and a time near year 1 or 9999
# overflows when converted to UTC or is one the database cannot hold. Inputs outside are refused.
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)


def in_service_range(moment: datetime) -> bool:
    """An aware instant inside [EARLIEST, LATEST) — False also when converting it to UTC overflows."""
    if moment.tzinfo is None:
        return False
    try:
        return EARLIEST <= moment.astimezone(UTC) < LATEST
    except OverflowError:  # 0001-01-01T00:00:00+05:00 is a datetime; its UTC is not
        return False
