"""Who holds a ledger claim, and whether that holder can still be alive.

A `running` row in `scrape_runs` is a claim on its provider (and slot, for a scheduled run). Each row
records its holder as `host:pid` (`claimed_by`), so a run that finds a claim can tell whose it is: on the same host a
process that is gone (a `kill -9`, an OOM kill, a container restart) is known dead at once, which
is what SQLite, without advisory locks, relies on before falling back to a lease. Postgres workers
use the advisory lock instead (tracker.pipeline.claims), and this identity only names the parties.
"""

from __future__ import annotations

import os
import socket
from functools import lru_cache

__all__ = ["holder_id", "local_process_gone", "parse_holder"]


@lru_cache(maxsize=1)
def _host() -> str:
    return socket.gethostname() or "localhost"


def holder_id() -> str:
    """This process, as recorded in `claimed_by` (the pid is read each time: a fork is another holder)."""
    return f"{_host()}:{os.getpid()}"


def parse_holder(holder: str | None) -> tuple[str, int] | None:
    """(host, pid) from a `claimed_by` value, or None when it is missing or not in that form."""
    if not holder:
        return None
    host, sep, pid = holder.rpartition(":")
    if not sep or not host or not pid.isdigit():
        return None
    return host, int(pid)


def local_process_gone(holder: str | None) -> bool:
    """True only when `holder` names a process on this host that no longer exists.

    Never True for another host, a malformed value, or a pid that exists (even if reused by some other
    process: that errs toward respecting the claim, and the lease still ends it).
    """
    parsed = parse_holder(holder)
    if parsed is None or parsed[0] != _host():
        return False
    pid = parsed[1]
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # exists, owned by another user
        return False
    return False
