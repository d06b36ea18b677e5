"""`gpu-tracker mcp`: the tracker as an MCP server, so an assistant can call its tools (api.mcp).

stdio (the default) is what a desktop assistant launches as a subprocess; nothing but the protocol goes
to stdout. `--http` serves streamable HTTP at /mcp behind TRACKER_API_TOKEN, for a remote assistant.
"""

from __future__ import annotations

import typer

from tracker.cli.context import runtime
from tracker.cli.output import err_console, fail

commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("mcp")
def mcp_server(
    ctx: typer.Context,
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP at /mcp instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="With --http: interface to bind."),
    port: int = typer.Option(8001, "--port", min=1, max=65535, help="With --http: port."),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level (with --http)."),
) -> None:
    """Serve the tools cheapest, estimate, market, history, availability, plan and alerts_list, and the
    providers, cards and api-prices resources, over MCP."""
    from api.mcp import build_server

    rt = runtime(ctx)
    server = build_server(rt.engine, rt.settings)
    if not http:
        server.run("stdio")
        return
    if rt.settings.api_token is None:
        fail("--http serves MCP behind the API's token: set TRACKER_API_TOKEN (or TRACKER_API_TOKEN_FILE) first")
    import uvicorn

    from api.mcp.http import PATH, http_app

    err_console.print(f"serving MCP on http://{host}:{port}{PATH} (bearer token: TRACKER_API_TOKEN)")
    uvicorn.run(http_app(server, rt.settings, host=host), host=host, port=port, log_level=log_level.lower())
