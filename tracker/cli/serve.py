"""`gpu-tracker up`: the API (and, on the embedded default, everything else) in one process."""

from __future__ import annotations

import asyncio

import typer

from tracker.cli.app import app
from tracker.cli.context import runtime
from tracker.cli.output import console


@app.command("up")
def up(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port", min=1, max=65535),
    demo: bool = typer.Option(False, "--demo", help="Load every bundled cassette first (offline demo data)."),
) -> None:
    """Start the API server (migrating the embedded SQLite database if needed)."""
    import uvicorn

    from api.app import create_app
    from tracker.scraping import plan, run_scrape

    rt = runtime(ctx)
    if demo:
        reports = asyncio.run(run_scrape(plan([], demo=True), rt.engine, rt.settings))
        ok = sum(r.status == "ok" for r in reports)
        console.print(f"demo data: {ok}/{len(reports)} providers replayed from bundled cassettes")
    console.print(f"serving on http://{host}:{port}")
    uvicorn.run(create_app(rt.settings, rt.engine), host=host, port=port, log_level="info")
