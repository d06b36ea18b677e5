"""An in-process API client over a database seeded the way a user's first scrape seeds it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import Engine

from api.app import create_app
from providers.adapters.reference import ReferenceRates
from providers.adapters.vastai import VastAi
from providers.cassette import Cassette, bundled_cassette
from tracker.config import Settings
from tracker.pipeline.scraping import ScrapeJob, run_scrape


@contextmanager
def seeded_client(
    engine: Engine, settings: Settings, *, token: str | None = None, vast: bool = True
) -> Iterator[TestClient]:
    """The reference sheet (and Vast's bundled cassette) ingested; the app on `engine`; caches emptied."""
    jobs = [ScrapeJob(ReferenceRates)]
    if vast:
        jobs.append(ScrapeJob(VastAi, "replay", Cassette.load(bundled_cassette("vastai"))))
    asyncio.run(run_scrape(jobs, engine, settings))
    if token is not None:
        settings = settings.model_copy(update={"api_token": SecretStr(token)})
    with TestClient(create_app(settings, engine), raise_server_exceptions=False) as c:
        yield c
