"""The MCP server over streamable HTTP, behind the API's bearer token (TRACKER_API_TOKEN).

The same rule as the API's writes (api.auth): no token configured is a 403 (an operator must choose
one), a missing or wrong one a 401. Every MCP request needs it, reads included: `alerts_list` shows
channel URLs, and those carry secrets. Stateless JSON responses: any replica answers any request.
"""

from __future__ import annotations

import json

from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from api.auth import token_problem
from tracker.config import Settings

PATH = "/mcp"


class BearerGuard:
    """ASGI middleware: HTTP requests pass only with the configured bearer token."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app, self.settings = app, settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, given = header.partition(" ")
        problem = token_problem(self.settings, given if scheme.lower() == "bearer" else "")
        if problem is None:
            await self.app(scope, receive, send)
            return
        status, message = problem
        headers = [(b"content-type", b"application/json")]
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": json.dumps({"detail": message}).encode()})


def http_app(server: MCPServer, settings: Settings, *, host: str = "127.0.0.1") -> ASGIApp:
    """The guarded Starlette app serving `server` at /mcp (its lifespan runs the session manager)."""
    # On loopback the SDK pins the Host and Origin headers to loopback (DNS rebinding); bound to every
    # interface (a container) it cannot know the public name, and the token is the guard.
    app = server.streamable_http_app(streamable_http_path=PATH, json_response=True, stateless_http=True, host=host)
    return BearerGuard(app, settings)
