"""The FastAPI application factory."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from sqlalchemy import Engine, text

from api import errors, metrics, routes
from api.schemas import ERROR_RESPONSES
from tracker import __version__
from tracker.config import Settings, get_settings
from tracker.storage.engine import engine_for


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Everything alive at startup (modules, the GPU catalog, settings) lives as long as the process:
    # frozen out of the collector, full GC passes stay short and stop dominating tail latency.
    gc.collect()
    gc.freeze()
    yield


def create_app(settings: Settings | None = None, engine: Engine | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(
        lifespan=_lifespan,
        responses=ERROR_RESPONSES,
        title="gpu-price-tracker",
        version=__version__,
        description=(
            "Which GPU, from which provider, is cheapest for this fine-tuning job today — and how has that changed?"
        ),
    )
    app.state.settings = settings
    app.state.engine = engine or engine_for(settings.resolved_database_url())
    errors.install(app)
    metrics.install(app)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, Any]:
        with app.state.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return {"status": "ok", "version": __version__}

    for router in routes.all_routers():
        app.include_router(router)
    return app
