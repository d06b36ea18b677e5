"""What one request may cost: the size of its body, and the size of the error it gets back.

FastAPI reads, parses and validates a request body on the event loop; only the endpoint itself runs
in the threadpool. An unbounded body therefore stalls every other request: a 13 MB `POST /v1/estimate`
of 700,000 unknown keys took 11.6 s, held /healthz for 11 s, peaked at 1.1 GB and answered with a
74 MB 422 (one error per key, each echoing its input). So:

* `BodyLimit` refuses a body over `max_body_bytes` with a 413 naming the field `body`: at once when the
  Content-Length says so (nothing is read), or as soon as a chunked body's streamed bytes pass it.
  Every JSON body this API takes (a job, with at most an inline config.json; an alert rule) is a few
  KiB, so 256 KiB leaves ample room, and within it parsing and validating stay in the milliseconds.
* `bounded_errors` keeps a 422 to the first `MAX_ERRORS` errors and under `MAX_ERROR_BYTES`, saying how
  many were left out: a body of 30,000 unknown keys gets ten errors and a count, not 30,000 echoes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY_BYTES = 256 * 1024
MAX_ERRORS = 10  # a person fixes the first few; the count says how many more there are
MAX_ERROR_BYTES = 16 * 1024
_MAX_FIELD_CHARS = 200  # a field named by the client (an unknown key) can be as long as the body


class RequestLimits(BaseSettings):
    """The limits, from the environment like every other setting (TRACKER_API_MAX_BODY_BYTES)."""

    model_config = SettingsConfigDict(env_prefix="TRACKER_API_", env_file=".env", extra="ignore")

    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, ge=1024, description="Largest request body accepted")


class BodyTooLarge(Exception):
    """Raised to the app from `receive` once the streamed body passes the limit."""


def _too_large(limit: int) -> JSONResponse:
    # No `Connection: close`: closing a socket with the rest of the upload unread makes the kernel send a
    # reset, and a client still writing loses the 413 it was sent. The server discards the rest instead.
    return JSONResponse(
        status_code=413, content={"detail": f"request body larger than {limit:,} bytes", "field": "body"}
    )


def _declared_length(scope: Scope) -> int | None:
    value = Headers(scope=scope).get("content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:  # the server rejects a malformed Content-Length before the app sees it
        return None


class BodyLimit:
    """Pure ASGI middleware: a body over `max_bytes` is a 413 `{"detail": ..., "field": "body"}`."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_bytes:
            await _too_large(self.max_bytes)(scope, receive, send)
            return
        received = 0
        exceeded = started = refused = False

        async def limited_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    exceeded = True
                    raise BodyTooLarge
            return message

        async def refuse() -> None:
            nonlocal started, refused
            started = refused = True
            await _too_large(self.max_bytes)(scope, receive, send)

        async def send_unless_refused(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the 413 went out instead of this response
            if exceeded and not started:
                # FastAPI turns any error while reading the body into a 400 of its own: the client
                # gets the 413 instead.
                await refuse()
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, send_unless_refused)
        except BodyTooLarge:
            if not started:
                await refuse()
            elif not refused:
                raise  # too late for a 413: the app had already started answering


def _encoded_size(body: Mapping[str, Any]) -> int:
    return len(json.dumps(body, ensure_ascii=False, default=str).encode("utf-8"))


def _short(value: object, chars: int) -> object:
    if isinstance(value, str) and len(value) > chars:
        return value[:chars] + "…"
    return value


def bounded_errors(
    render: Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]], errors: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """`render(errors)` (the 422 body: `detail`, the list, and `field`) for the first few errors only,
    with `omitted` counting the rest, and never more than MAX_ERROR_BYTES once encoded."""
    body = render(list(errors[:MAX_ERRORS]))
    omitted = len(errors) - len(body["detail"])
    body["field"] = _short(body.get("field"), _MAX_FIELD_CHARS)
    # Each echo is already cut short by `render`, but ten long ones can still add up: drop from the end.
    while len(body["detail"]) > 1 and _encoded_size(body) > MAX_ERROR_BYTES:
        body["detail"].pop()
        omitted += 1
    if body["detail"] and _encoded_size(body) > MAX_ERROR_BYTES:
        first = body["detail"][0]
        body["detail"] = [
            {
                "type": _short(first.get("type"), 100),
                "loc": [_short(part, 100) for part in first.get("loc", ())],
                "msg": _short(first.get("msg"), 1000),
            }
        ]
    if omitted:
        body["omitted"] = omitted
    return body


__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "MAX_ERRORS",
    "MAX_ERROR_BYTES",
    "BodyLimit",
    "BodyTooLarge",
    "RequestLimits",
    "bounded_errors",
]
