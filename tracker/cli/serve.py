"""`gpu-tracker up`: the whole service in one process — API, dashboard and the scheduler worker."""

from __future__ import annotations

import asyncio

import typer

from tracker.cli.context import runtime
from tracker.cli.output import console

commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("up")
def up(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port", min=1, max=65535),
    demo: bool = typer.Option(False, "--demo", help="Replay the bundled cassettes instead of live providers."),
    worker: bool = typer.Option(True, "--worker/--no-worker", help="Run the scheduler in this process."),
) -> None:
    """Start the API with the scheduler worker in-process (the embedded default migrates itself).

    In production run `gpu-tracker api` and `gpu-tracker worker` as separate processes instead.
    """
    import uvicorn

    from api.app import create_app
    from tracker.pipeline.scraping import plan, run_scrape
    from tracker.pipeline.worker import start_background_worker

    rt = runtime(ctx)
    if demo:
        reports = asyncio.run(run_scrape(plan([], demo=True), rt.engine, rt.settings))
        ok = sum(r.status == "ok" for r in reports)
        console.print(f"demo data: {ok}/{len(reports)} providers replayed from bundled cassettes")
    scheduler = start_background_worker(rt.engine, rt.settings, demo=demo) if worker else None
    console.print(f"serving on http://{host}:{port}" + (" with the worker in-process" if scheduler else ""))
    try:
        uvicorn.run(create_app(rt.settings, rt.engine), host=host, port=port, log_level="info")
    finally:
        if scheduler is not None:
            scheduler.shutdown(wait=False)
