"""`import aws-price-history --since 2023-01`: the AWS Price List's published offer versions of EC2.

The service version index (`/offers/v1.0/aws/AmazonEC2/index.json`) lists every publication: its id,
`versionEffectiveBeginDate` and `offerVersionUrl`. Each version's regional price-list CSVs sit beside its
index (`…/AmazonEC2/<version>/<region>/index.csv`) and are streamed and parsed exactly as the AWS adapter
streams the current list (`providers.adapters.aws.fetch_regions`): each version is one observation of AWS
at its effective date, replayed through ingest (tracker.history.imports.replay). A version whose files the
parser refuses (or that cannot be fetched) is a failed run. The files are hundreds of MB per region and
version: `--regions` narrows what is read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy.orm import Session

from providers.adapters.aws import REGIONS, Aws, fetch_regions
from providers.contract import FetchContext, ProviderError, ScrapeResult
from providers.http import get_json
from tracker.config import Settings
from tracker.history.dataset import DatasetError
from tracker.history.imports import ImportReport
from tracker.history.imports.replay import Observation, replay

HOST = "https://pricing.us-east-1.amazonaws.com"
INDEX_URL = f"{HOST}/offers/v1.0/aws/AmazonEC2/index.json"
Transports = Callable[[], httpx.AsyncBaseTransport]


async def _with_client(transport: Transports, settings: Settings, work: Callable[[FetchContext], Any]) -> Any:
    async with httpx.AsyncClient(transport=transport(), timeout=settings.http_timeout_s) as client:
        return await work(FetchContext(client=client, retries=settings.http_retries))


def versions(index: Any, since: datetime | None) -> list[tuple[datetime, str, str]]:
    """(effective from, version id, regional CSV URL template) of each published version, oldest first."""
    listed = index.get("versions") if isinstance(index, dict) else None
    if not isinstance(listed, dict):
        raise DatasetError("the AWS version index has no 'versions' object")
    out = []
    for vid, v in listed.items():
        try:
            begin = datetime.fromisoformat(str(v["versionEffectiveBeginDate"]).replace("Z", "+00:00"))
            url = str(v["offerVersionUrl"])
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f"AWS version {vid}: no usable effective date or URL ({exc})") from None
        begin = begin.replace(tzinfo=UTC) if begin.tzinfo is None else begin.astimezone(UTC)
        if not url.startswith("/offers/") or (since is not None and begin < since):
            continue
        out.append((begin, str(vid), HOST + url.rsplit("/", 1)[0] + "/{region}/index.csv"))
    return sorted(out)


def import_aws_history(
    session: Session,
    *,
    settings: Settings,
    now: datetime,
    since: datetime | None,
    regions: tuple[str, ...] = REGIONS,
    transport: Transports = httpx.AsyncHTTPTransport,
) -> ImportReport:
    """Replay every published EC2 version effective from `since` on, in the caller's transaction."""
    try:
        index = asyncio.run(_with_client(transport, settings, lambda ctx: get_json(ctx, INDEX_URL)))
    except ProviderError as exc:
        raise DatasetError(f"AWS version index: {exc}") from None
    report = ImportReport(kind="aws-price-history", source=INDEX_URL)
    published = versions(index, since)
    report.files_read = len(published) * len(regions)

    def observation(version: tuple[datetime, str, str]) -> Observation:
        begin, vid, template = version

        def parse() -> ScrapeResult:
            result: ScrapeResult = asyncio.run(
                _with_client(transport, settings, lambda ctx: fetch_regions(ctx, template, regions))
            )
            return result

        return Observation(begin, f"AWS EC2 version {vid}", f"aws-price-history:{vid}", parse)

    replay(
        session, Aws.name, Aws.parser_version, map(observation, published), settings=settings, now=now, report=report
    )
    return report
