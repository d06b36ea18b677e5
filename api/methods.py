"""HTTP methods: HEAD served wherever GET is, and the methods a path allows (for 405's `Allow`).

FastAPI's routes list only the methods they were declared with, so `HEAD /v1/market` was a 405 while
RFC 9110 says a server that serves GET should serve HEAD too (monitors and link checkers use it).
Rather than declaring HEAD on every route, `HeadAsGet` routes a HEAD request as a GET and drops the
body it produces: the headers (Content-Length included) are exactly those of the GET.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The methods any route here may declare; the `Allow` header probes each of them.
STANDARD_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# Set in the scope of a HEAD request that is routed as a GET: what the client really sent.
ORIGINAL_METHOD = "tracker.original_method"


def request_method(scope: Scope) -> str:
    """The method the client sent (HEAD, for a HEAD routed as a GET)."""
    return str(scope.get(ORIGINAL_METHOD) or scope["method"])


class HeadAsGet:
    """Serve HEAD as GET without a body. Pure ASGI, so a streamed GET is not buffered to be dropped."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        # A copy: the server keeps its own scope saying HEAD, so it expects (and sends) no body.
        get_scope = {**scope, "method": "GET", ORIGINAL_METHOD: "HEAD"}

        async def send_headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}  # more_body kept: the response still ends once
            await send(message)

        await self.app(get_scope, receive, send_headers_only)


__all__ = ["ORIGINAL_METHOD", "STANDARD_METHODS", "HeadAsGet", "request_method"]
