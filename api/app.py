"""The FastAPI application factory."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from api import errors, metrics, routes
from api.limits import BodyLimit, RequestLimits
from api.methods import HeadAsGet
from api.schemas import ERROR_RESPONSES
from tracker import __version__
from tracker.clock import utcnow
from tracker.config import Settings, get_settings
from tracker.market import spill
from tracker.market.live import LiveOffers
from tracker.market.rank import warm_ranking
from tracker.market.service import KEPT_WITH_TABLE, warm_cost_terms, warm_statistics
from tracker.storage.engine import engine_for, probe

log = logging.getLogger(__name__)


class InvalidDatabaseUrl(ValueError):
    """TRACKER_DATABASE_URL cannot be used: one line saying why, instead of SQLAlchemy's traceback."""


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Everything alive at startup (modules, the GPU catalog, settings) lives as long as the process:
    # frozen out of the collector, full GC passes stay short and stop dominating tail latency.
    gc.collect()
    gc.freeze()
    yield
    # The version reader's own connection (api.cached) goes with the app, not whenever it is collected.
    reads = getattr(app.state, "version_reads", None)
    if reads is not None:
        reads.close()


def _engine(settings: Settings) -> Engine:
    url = settings.resolved_database_url()
    try:
        return engine_for(url)
    except (ArgumentError, ValueError, ImportError) as exc:  # unparseable, a bad port, an unknown driver
        try:
            where = make_url(url).render_as_string(hide_password=True)
        except (ArgumentError, ValueError):
            where = "<unparseable>"
        # `from None`: the cause is in the message; SQLAlchemy's stack says nothing more to an operator.
        raise InvalidDatabaseUrl(f"TRACKER_DATABASE_URL is not a usable database URL ({where}): {exc}") from None


def create_app(
    settings: Settings | None = None,
    engine: Engine | None = None,
    limits: RequestLimits | None = None,
    *,
    clock: Callable[[], datetime] | None = None,
    live: LiveOffers | None = None,
) -> FastAPI:
    """`clock` and `live` (api.deps): the time and the live-offer table the routes use; by default the
    system clock and a table of the app's own."""
    settings = settings or get_settings()
    limits = limits or RequestLimits()
    app = FastAPI(
        lifespan=_lifespan,
        responses=ERROR_RESPONSES,
        title="gpu-price-tracker",
        # /docs is served from vendored assets by api.routes.docs (FastAPI's own page needs a CDN).
        docs_url=None,
        redoc_url=None,
        version=__version__,
        description=(
            "Which GPU, from which provider, is cheapest for this fine-tuning job today — and how has that changed?"
        ),
    )
    app.state.settings = settings
    app.state.engine = engine or _engine(settings)
    app.state.clock = clock or utcnow
    # The API's own table is rebuilt off the request path when an ingest moves the data version, with the
    # offers' cost terms, what rankings gather from it and the statistics' pandas view (tracker.market.live);
    # a caller injecting one chooses for itself (tests: exact).
    # Each table it loads from the database is also kept on disk (tracker.market.spill, with the cost terms):
    # a restarted or second API process, or `gpu-tracker cheapest` on the same data directory, at the same
    # data version reads it back instead of rebuilding it.
    warmers = [warm_cost_terms, warm_ranking, warm_statistics]
    app.state.live = (
        live
        if live is not None
        else LiveOffers(
            background=True,
            warmers=warmers,
            spill_dir=spill.directory(settings.data_dir),
            spill_keys=KEPT_WITH_TABLE,
            keep_loaded=True,
        )
    )
    errors.install(app)
    # Middleware added later wraps what came before: HEAD-as-GET outermost (the metrics see the route it
    # matched as a GET, labelled HEAD), then the metrics (which count the 413s), then the body limit.
    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)
    metrics.install(app)
    app.add_middleware(HeadAsGet)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> Any:
        # Outside the pool: a pool busy with plans or scrapes is no reason for an orchestrator to restart us.
        try:
            probe(app.state.engine)
        except Exception as exc:  # the driver's own error types differ per backend
            log.error("health check: database unreachable: %s", str(exc).splitlines()[0] if str(exc) else exc)
            return JSONResponse(status_code=503, content={"detail": "database unavailable"})
        return {"status": "ok", "version": __version__}

    for router in routes.all_routers():
        app.include_router(router)
    return app
