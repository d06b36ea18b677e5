"""Waiting, bounded, for what another thread does (a background rebuild, a file written after an answer)."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(done: Callable[[], object], timeout: float = 10.0) -> bool:
    """True as soon as `done()` is true; False once `timeout` seconds have passed without it."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
