"""`gpu-tracker api`: the HTTP API and dashboard alone, for deployments where `gpu-tracker worker` scrapes.

Unlike `up` it never loads demo data, and on PostgreSQL it refuses to start on an unmigrated database
(run `gpu-tracker db upgrade` first, as the compose file's `migrate` service does).
"""

from __future__ import annotations

import typer

from tracker.cli.context import runtime
from tracker.cli.output import console

commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("api")
def api_server(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind; 0.0.0.0 inside a container."),
    port: int = typer.Option(8000, "--port", min=1, max=65535),
    forwarded_allow_ips: str = typer.Option(
        "127.0.0.1", "--forwarded-allow-ips", help="Proxies whose X-Forwarded-* headers are trusted."
    ),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level: debug, info, warning, error."),
) -> None:
    """Serve the API, the dashboard at / and Prometheus metrics at /metrics (no scraping in this process)."""
    # Imported here: tracker/ stays free of HTTP frameworks, and other commands start faster.
    import uvicorn

    from api.app import create_app

    rt = runtime(ctx)
    console.print(f"serving the API on http://{host}:{port} (dashboard at /, metrics at /metrics)")
    uvicorn.run(
        create_app(rt.settings, rt.engine),
        host=host,
        port=port,
        log_level=log_level.lower(),
        proxy_headers=True,
        forwarded_allow_ips=forwarded_allow_ips,
    )
