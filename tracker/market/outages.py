"""Outages: stretches in which a provider was not observed, which history draws as gaps.

Change-only history keeps an unchanged price row open from one observation to the next, so a provider
that went unobserved for three weeks and came back at the same price would otherwise be credited with
those three weeks. A silence counts as an outage when the time between two successful observations of the
provider is longer than OUTAGE_FACTOR times its usual cadence (the median spacing of its observations)
and longer than its freshness window; the outage runs from the earlier observation plus the longer of the
two (what history credits any observation with) to the later one. A provider observed at a steady pace,
however slow (a rate sheet read yearly, a seed every three days), has none; one needs three observations
before its cadence is known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.config import Settings
from tracker.market import freshness
from tracker.storage.sql import read_columns_by
from tracker.storage.tables import ScrapeRun

OUTAGE_FACTOR = 3
CADENCE_SPAN = timedelta(days=90)
_US = timedelta(microseconds=1)


def outages(
    session: Session, settings: Settings, providers: Sequence[str], end: datetime, start: datetime | None = None
) -> dict[str, list[tuple[int, int]]]:
    """Per provider, its outages before `end` as (from, to) microseconds since the epoch; with `start`, read
    from CADENCE_SPAN before it (the cadence is that span's, and an answer over [start, end) pays for no more)."""
    since = [ScrapeRun.observed_at >= start - CADENCE_SPAN] if start is not None else []
    # The instants as one array per provider (read_columns_by): a year of hourly runs is ~11,000 instants
    # each, which as rows (and epoch arithmetic in SQL) cost more than the history they cut.
    read = read_columns_by(
        session,
        select(ScrapeRun.provider, ScrapeRun.observed_at).where(
            ScrapeRun.provider.in_(providers), ScrapeRun.status == "ok", ScrapeRun.observed_at < end, *since
        ),
        ("instant",),
    )
    times = {provider: at[at >= 0] for provider, (at,) in read.items()}
    return silences(times, settings)


def silences(times: Mapping[str, Sequence[int] | np.ndarray], settings: Settings) -> dict[str, list[tuple[int, int]]]:
    """The rule itself, on each provider's successful observation instants (µs since the epoch, any order):
    what `outages` reads from the database, and the index (tracker.market.index) from an export."""
    out: dict[str, list[tuple[int, int]]] = {}
    for provider, seen in times.items():
        at = np.unique(np.array(seen, dtype=np.int64))
        if len(at) < 3:
            continue
        spacing = np.diff(at)
        cadence = float(np.median(spacing))
        credit = max(freshness.window(provider, settings) // _US, int(cadence))
        silent = np.flatnonzero((spacing > OUTAGE_FACTOR * cadence) & (spacing > credit))
        if len(silent):
            out[provider] = [(int(at[i]) + credit, int(at[i + 1])) for i in silent]
    return out


def cut(
    dark: dict[str, list[tuple[int, int]]], names: Sequence[str], columns: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The intervals `columns["lo"]`..`columns["hi"]` (with their parallel columns, and `provider` codes into
    `names`) without the outages: an interval spanning one becomes the part before and the part after."""
    for code, name in enumerate(names):
        for d0, d1 in dark.get(name, ()):
            lo, hi = columns["lo"], columns["hi"]
            hit = (columns["provider"] == code) & (lo < d1) & (hi > d0)
            if not hit.any():
                continue
            after = {k: v[hit].copy() for k, v in columns.items()}
            after["lo"] = np.maximum(after["lo"], d1)
            columns["hi"] = np.where(hit, np.minimum(hi, d0), hi)
            columns = {k: np.concatenate((v, after[k])) for k, v in columns.items()}
    return columns
