"""The run ledger (`scrape_runs`): one row per provider scrape attempt, whatever its outcome."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["RunStatus"]


class RunStatus(StrEnum):
    """A ledger row's `status`. A StrEnum, so the stored values are these plain strings."""

    running = "running"  # a claim: its holder is at work, or died (then reclaimable)
    ok = "ok"
    failed = "failed"
    quarantined = "quarantined"  # fetched, but the batch looked broken: nothing applied
    skipped = "skipped"  # not attempted (no credentials)
