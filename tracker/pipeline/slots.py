"""Schedule slots: each provider's cadence cut into epoch-aligned intervals, one run per slot.

`SlotTrigger` is an APScheduler 3 trigger that fires once per slot, at the slot's start plus a random
delay (jitter, so many workers and providers do not hit the network at the same instant). APScheduler's
own IntervalTrigger adds each jitter to the previous *jittered* fire time, so its fire times drift off
the grid and now and then skip a slot entirely; this trigger recomputes every fire time from the slot
grid instead.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from apscheduler.triggers.base import BaseTrigger

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def slot_start(now: datetime, interval: timedelta) -> datetime:
    """The schedule slot `now` falls in: floor(now / interval), aligned to the Unix epoch (UTC)."""
    return EPOCH + ((now - EPOCH) // interval) * interval


class SlotTrigger(BaseTrigger):  # type: ignore[misc]  # APScheduler 3 ships no type information
    """First fire: at once (the current slot). Then: each following slot's start + U(0, jitter) seconds."""

    def __init__(
        self, interval: timedelta, jitter_s: float = 0.0, rand: Callable[[float, float], float] = random.uniform
    ) -> None:
        if interval <= timedelta(0):
            raise ValueError("interval must be positive")
        self.interval = interval
        # Capped so a jittered fire time always stays inside its own slot.
        self.jitter_s = max(0.0, min(jitter_s, interval.total_seconds() / 4))
        self._rand = rand

    def get_next_fire_time(self, previous_fire_time: datetime | None, now: datetime) -> datetime:
        if previous_fire_time is None:
            return now
        # The previous fire lies inside its slot (jitter < interval), so the next slot follows from it.
        next_slot = slot_start(previous_fire_time.astimezone(UTC), self.interval) + self.interval
        delay = self._rand(0.0, self.jitter_s) if self.jitter_s else 0.0
        return next_slot + timedelta(seconds=delay)

    def __str__(self) -> str:
        return f"slot[{self.interval}, jitter {self.jitter_s:.0f}s]"

    def __repr__(self) -> str:
        return f"<SlotTrigger (interval={self.interval!r}, jitter_s={self.jitter_s})>"
