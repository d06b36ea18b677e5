"""`import snapshots DIR --provider P`: a directory of one provider's dated raw responses, replayed in time
order through the provider's own parser and `tracker.ingest.batch.ingest`, each as a scrape at its time.

A file's time is the ISO-8601 instant its name starts with (`2025-06-15T10-27-05+00-00_aef71e0.json`:
dashes may stand for colons, as file systems need). The provider's `fetch` runs against a transport that
answers every request with the file's body, so whatever parsing, naming and validation a scrape does
happens here too; a provider whose fetch needs several different answers cannot be replayed from one file.
Credentials the fetch asks for are placeholders: nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
from sqlalchemy.orm import Session

from providers.contract import FetchContext, Provider, ScrapeResult
from providers.fetching import fetch_offers
from tracker.config import Settings
from tracker.history.dataset import DatasetError, sha256
from tracker.history.imports import ImportReport
from tracker.history.imports.replay import Observation, replay

_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})[T_ ](\d{2})[-:]?(\d{2})[-:]?(\d{2})(\.\d+)?(Z|[+-]\d{2}[-:]?\d{2})?")


@dataclass(frozen=True)
class Snapshot:
    path: Path
    at: datetime


def snapshot_time(name: str) -> datetime:
    """The instant a snapshot's file name starts with; a name without one is refused (DatasetError)."""
    m = _STAMP.match(name)
    if not m:
        raise DatasetError(f"{name}: the file name does not start with a timestamp (e.g. 2025-06-15T10-27-05+00-00)")
    day, hh, mm, ss, frac, zone = m.groups()
    zone = "+00:00" if zone in (None, "Z") else f"{zone[:3]}:{zone[-2:]}"
    try:
        return datetime.fromisoformat(f"{day}T{hh}:{mm}:{ss}{frac or ''}{zone}").astimezone(UTC)
    except ValueError as exc:
        raise DatasetError(f"{name}: {exc}") from None


def list_snapshots(directory: Path) -> list[Snapshot]:
    if not directory.is_dir():
        raise DatasetError(f"{directory}: not a directory")
    files = [p for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")]
    snaps = sorted((Snapshot(p, snapshot_time(p.name)) for p in files), key=lambda s: (s.at, s.path.name))
    if not snaps:
        raise DatasetError(f"{directory}: no snapshot files")
    return snaps


async def _parse(provider: type[Provider], body: bytes) -> ScrapeResult:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    names = (*provider.credentials, *provider.optional_credentials)
    credentials = {c: provider.demo_credentials.get(c, "snapshot-replay") for c in names}
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        return await fetch_offers(
            provider, FetchContext(client=client, credentials=credentials, retries=0, backoff_base_s=0.0)
        )


def import_snapshots(
    session: Session, directory: Path, provider: type[Provider], *, settings: Settings, now: datetime
) -> ImportReport:
    """Replay every snapshot newer than the provider's stored history, in the caller's transaction."""
    snaps = list_snapshots(directory)
    report = ImportReport(kind="snapshots", source=str(directory), files_read=len(snaps))

    def observation(snap: Snapshot) -> Observation:
        body = snap.path.read_bytes()
        return Observation(
            snap.at,
            snap.path.name,
            f"snapshots:{snap.path.name}@sha256:{sha256(body)}",
            lambda: asyncio.run(_parse(provider, body)),
        )

    replay(
        session,
        provider.name,
        provider.parser_version,
        map(observation, snaps),
        settings=settings,
        now=now,
        report=report,
    )
    return report
