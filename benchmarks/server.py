"""The app under load: the real `create_app`, plus a hello-world route as the anchor on the same server.

Served by uvicorn in a subprocess (`uvicorn --factory benchmarks.server:build`); the database comes from
BENCH_DATABASE_URL. The anchor is a route on the very same app and process — not a second server — so
it shares every server setting, middleware and exception handler with the endpoints it is compared to.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fastapi import FastAPI

from api.app import create_app
from tracker.config import Settings
from tracker.storage.engine import make_engine

HELLO_PATH = "/bench/hello"


def build() -> FastAPI:
    url = os.environ["BENCH_DATABASE_URL"]
    settings = Settings(database_url=url, data_dir=Path(os.environ.get("BENCH_DATA_DIR", tempfile.gettempdir())))
    app = create_app(settings, make_engine(url))

    @app.get(HELLO_PATH, include_in_schema=False)
    async def hello() -> dict[str, str]:
        return {"message": "Hello World"}

    return app
