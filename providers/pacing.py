"""Requests spaced under a provider's documented rate limit (`Provider.requests_per_minute`).

Its own module, below both `providers.contract` (a fetch context carries its pacer) and `providers.http`
(which spaces every request with it), so neither has to import the other for the type.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class RequestPacer:
    """Spaces the requests of one fetch so they stay under a provider's documented rate limit
    (`Provider.requests_per_minute`): each request starts at least 60 / rpm seconds after the one before,
    retries included (a retried request counts against the limit like any other).

    Spacing rather than a budget per minute: a paginated walk that bursts its first N pages and then waits
    out the minute trips limiters that count per second as well, and even spacing costs the same time.

    In replay (`real_time=False`) nothing sleeps: the schedule runs on a virtual clock, so `waited_s` still
    says how long a live fetch would have waited and a recorded walk of many pages takes no wall time.
    Safe for concurrent requests of one fetch (`gather_bounded`): a slot is claimed with no await between
    reading and moving the schedule, so two requests never share one."""

    def __init__(
        self,
        requests_per_minute: float,
        *,
        real_time: bool = True,
        clock: Callable[[], float] | None = None,  # default time.monotonic, looked up when made
        sleep: Callable[[float], Awaitable[None]] | None = None,  # default asyncio.sleep, likewise
    ) -> None:
        if not requests_per_minute > 0:
            raise ValueError(f"requests_per_minute must be positive, got {requests_per_minute!r}")
        self.interval_s = 60.0 / requests_per_minute
        self.real_time = real_time
        self._clock = clock or time.monotonic
        self._sleep = sleep or asyncio.sleep
        self._virtual = 0.0
        self._next: float | None = None
        self.requests = 0
        self.waited_s = 0.0

    def _now(self) -> float:
        return self._clock() if self.real_time else self._virtual

    async def wait(self) -> float:
        """Wait for this request's slot; returns the seconds waited (virtual ones in replay)."""
        now = self._now()
        start = now if self._next is None else max(now, self._next)
        self._next = start + self.interval_s
        self.requests += 1
        delay = start - now
        self.waited_s += delay
        if not self.real_time:
            self._virtual = start
        elif delay > 0:
            await self._sleep(delay)
        return delay
