"""Imports of published price histories, each kind idempotent (running it twice adds nothing).

The rule that keeps an import from rewriting what a live scrape observed, per kind:

* `snapshots` (a provider's dated raw responses): each snapshot replays through the provider's own parser
  and `tracker.ingest.batch.ingest` as a scrape at its timestamp, labelled `source="import"` with the file
  and its SHA-256 as `source_version`. Change-only history is built forward in time, so a snapshot is
  replayed only when it is later than every observation already stored for that provider; one at or
  before it (a live one included) is skipped and counted as "covered". An import therefore fills only the
  time before a provider's first live observation: seed, then scrape. After the last snapshot the offers it
  listed are closed at its time plus the provider's freshness window (the span history already credits an
  unrefreshed offer with), so a later live scrape starts a new row instead of drawing a line across the gap.
* `export` (our own dataset): a restore of already validated rows. An offer the database does not hold is
  restored whole; for one it holds, only rows that begin before its first stored row are added, cut off at
  that row's start. Runs are matched on (provider, started_at, attempt).
* `skypilot-catalog` (a clone of SkyPilot's catalog repository): each commit that changed a cloud's
  `vms.csv` is an observation of that cloud at the commit time, replayed like a snapshot, same rule.
* `aggregates` (a third party's market statistics): a separate table (`external_aggregates`), keyed by
  (source, card name, instant); never offers, never mixed into our statistics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ImportReport:
    kind: str
    source: str  # the directory or repository read
    files_read: int = 0
    rows_read: int = 0
    runs: int = 0  # runs written (an imported observation is a run, as a scrape is)
    offers_new: int = 0
    price_rows: int = 0
    fx_rows: int = 0
    availability_rows: int = 0
    aggregate_rows: int = 0
    skipped: int = 0  # observations or rows already covered (by this import before, or by a scrape)
    quarantined: int = 0
    failed: list[str] = field(default_factory=list)  # observations the provider's parser refused (failed runs)
    unknown_names: dict[str, int] = field(default_factory=dict)
    unknown_sources: dict[str, int] = field(default_factory=dict)  # e.g. a SkyPilot cloud we have no provider for
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def count_unknown(self, names: dict[str, int]) -> None:
        for name, n in names.items():
            self.unknown_names[name] = self.unknown_names.get(name, 0) + n


__all__ = ["ImportReport"]
