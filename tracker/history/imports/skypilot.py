"""`import skypilot-catalog REPO`: years of cloud GPU prices from the git history of a local clone of
SkyPilot's public catalog repository (`catalogs/v<schema>/<cloud>/vms.csv`).

Each commit that changed a cloud's `vms.csv` is a dated observation of that cloud (the commit time), read
from git (`git cat-file`: no checkout) and replayed through ingest like a scrape (tracker.history.imports.
replay): its rows become offers of our provider for that cloud (CLOUDS), keyed by instance type, region
and zone, on-demand (`Price`) and spot (`SpotPrice`); GPU names resolve through the catalog with that
provider's naming conventions, and unknown ones are recorded and reported as a scrape's are. A cloud we
have no provider for is reported, not read. When a commit holds several schema versions of a cloud's
file, the newest is read. A row that does not parse is set aside with the reason, like a scrape's.
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
from collections import defaultdict
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path

from sqlalchemy.orm import Session

from providers.contract import Pricing, ProviderError, ScrapedOffer, ScrapeResult
from providers.registry import UnknownProvider, get_provider
from tracker.config import Settings
from tracker.history.dataset import DatasetError
from tracker.history.imports import ImportReport
from tracker.history.imports.replay import Observation, replay

# SkyPilot's cloud directory → our provider.
CLOUDS = {
    "aws": "aws",
    "gcp": "gcp",
    "azure": "azure",
    "lambda": "lambdalabs",
    "runpod": "runpod",
    "vast": "vastai",
    "paperspace": "paperspace",
    "cudo": "cudo",
    "do": "digitalocean",
    "fluidstack": "fluidstack",
    "nebius": "nebius",
    "oci": "oci",
    "primeintellect": "primeintellect",
    "seeweb": "seeweb",
    "shadeform": "shadeform",
}
_PATH = re.compile(r"^catalogs/v(\d+)/([^/]+)/vms\.csv$")
_MIB = re.compile(r"SizeInMiB['\"]?\s*:\s*(\d+)")
REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price")


def _git(repo: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True, timeout=600)
    except FileNotFoundError:
        raise DatasetError("git is not installed: the SkyPilot catalog is read from its git history") from None
    except subprocess.CalledProcessError as exc:
        raise DatasetError(
            f"{repo}: git {args[0]} failed: {exc.stderr.decode(errors='replace').strip()[:300]}"
        ) from None
    return done.stdout


def _decimal(text: str | None) -> Decimal | None:
    if text is None or not text.strip():
        return None
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise ValueError(f"{text.strip()[:30]!r} is not a number") from None
    return value if value.is_finite() else None


def parse_vms(data: bytes, where: str) -> ScrapeResult:
    """A `vms.csv` as offers: one on-demand and, where priced, one spot offer per GPU instance and zone."""
    try:
        reader = csv.DictReader(io.StringIO(data.decode("utf-8")))
        fields = set(reader.fieldnames or ())
        rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ProviderError(f"{where}: not a readable CSV ({exc})") from None
    if missing := [c for c in REQUIRED if c not in fields]:
        raise ProviderError(f"schema changed: {where} has no {', '.join(missing)} column")
    result, seen = ScrapeResult(), set()
    for n, row in enumerate(rows, start=2):
        name = (row.get("AcceleratorName") or "").strip()
        if not name:
            continue  # a CPU instance
        try:
            count, od, spot = (_decimal(row.get(c)) for c in ("AcceleratorCount", "Price", "SpotPrice"))
            vcpus, ram = _decimal(row.get("vCPUs")), _decimal(row.get("MemoryGiB"))
        except ValueError as exc:
            result.skipped.append(f"{where} line {n}: {exc}")
            continue
        if count is None or count <= 0:
            continue
        mib = _MIB.search(row.get("GpuInfo") or row.get("GPUInfo") or "")
        region = (row.get("Region") or "").strip().lower()
        zone = (row.get("AvailabilityZone") or "").strip().lower()
        base = f"{(row.get('InstanceType') or name).strip()}:{region}:{zone}"
        for pricing, price, key in ((Pricing.on_demand, od, base), (Pricing.spot, spot, f"{base}:spot")):
            if price is None or price <= 0 or key in seen:
                continue
            seen.add(key)
            result.offers.append(
                ScrapedOffer(
                    key=key,
                    gpu_name=name,
                    gpu_count=count,
                    price_per_hour=price,
                    pricing=pricing,
                    region=region,
                    instance_type=(row.get("InstanceType") or "").strip() or None,
                    vcpus=vcpus,
                    ram_gb=ram,
                    gpu_memory_gb=Decimal(mib[1]) / 1024 if mib and int(mib[1]) > 0 else None,
                )
            )
    return result


def _observations(repo: Path, since: datetime | None) -> dict[str, list[tuple[datetime, str, str, str]]]:
    """Per SkyPilot cloud: (commit time, commit, path, blob) of each commit that changed its newest vms.csv."""
    log = _git(repo, "log", "--reverse", "--format=%H %cI", "--", "catalogs").decode().split("\n")
    out: dict[str, list[tuple[datetime, str, str, str]]] = defaultdict(list)
    last_blob: dict[str, str] = {}
    for line in filter(None, log):
        commit, stamp = line.split(" ", 1)
        at = datetime.fromisoformat(stamp).astimezone(UTC)
        newest: dict[str, tuple[int, str, str]] = {}
        for entry in _git(repo, "ls-tree", "-r", commit, "--", "catalogs").decode().splitlines():
            meta, path = entry.split("\t", 1)
            if (m := _PATH.match(path)) and (int(m[1]), path) > newest.get(m[2], (-1, "", ""))[:2]:
                newest[m[2]] = (int(m[1]), path, meta.split()[2])
        for cloud, (_, path, blob) in newest.items():
            if last_blob.get(cloud) != blob:
                last_blob[cloud] = blob
                if since is None or at >= since:
                    out[cloud].append((at, commit, path, blob))
    return out


def import_skypilot(
    session: Session, repo: Path, *, settings: Settings, now: datetime, since: datetime | None = None
) -> ImportReport:
    """Replay each cloud's catalog history, oldest commit first, in the caller's transaction."""
    if not repo.is_dir():
        raise DatasetError(f"{repo}: not a directory")
    _git(repo, "rev-parse", "--git-dir")  # DatasetError when it is no git repository
    report = ImportReport(kind="skypilot-catalog", source=str(repo))
    for cloud, changes in sorted(_observations(repo, since).items()):
        report.files_read += len(changes)
        try:
            provider = get_provider(CLOUDS[cloud])
        except (KeyError, UnknownProvider):
            report.unknown_sources[cloud] = len(changes)
            report.notes.append(f"cloud {cloud!r}: no provider of ours; {len(changes)} versions not read")
            continue

        def observation(change: tuple[datetime, str, str, str]) -> Observation:
            at, commit, path, blob = change
            where = f"{path}@{commit[:12]}"
            return Observation(
                at,
                where,
                f"skypilot-catalog:{path}@{commit}",
                lambda: parse_vms(_git(repo, "cat-file", "blob", blob), where),
            )

        replay(
            session,
            provider.name,
            f"skypilot-v{changes[-1][2].split('/')[1][1:]}",
            map(observation, changes),
            settings=settings,
            now=now,
            report=report,
        )
    return report
