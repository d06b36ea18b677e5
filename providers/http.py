"""HTTP helpers shared by providers: retries with backoff on 429/5xx, JSON decoding with clear errors."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx

from providers.base import FetchContext, ProviderError

RETRY_STATUS = {429, 500, 502, 503, 504}


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


async def request(
    ctx: FetchContext,
    method: str,
    url: str,
    *,
    params: Any = None,
    json: Any = None,
    data: Any = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """Send one request, retrying transient failures; raise ProviderError on a final failure."""
    attempts = ctx.retries + 1
    last_problem = ""
    for attempt in range(attempts):
        try:
            response = await ctx.client.request(
                method, url, params=params, json=json, data=data, headers=headers
            )
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            last_problem = f"{type(exc).__name__} on {method} {_safe(url)}"
            response = None
        else:
            if response.status_code not in RETRY_STATUS:
                if response.is_error:
                    raise ProviderError(
                        f"HTTP {response.status_code} from {method} {_safe(url)}: {_snippet(response)}"
                    )
                return response
            last_problem = f"HTTP {response.status_code} from {method} {_safe(url)}"
        if attempt + 1 < attempts:
            delay = ctx.backoff_base_s * (2**attempt) * (1 + random.random() / 4)
            if response is not None and (hint := _retry_after(response)) is not None:
                delay = max(delay, min(hint, 60.0)) if ctx.backoff_base_s else 0.0
            await asyncio.sleep(delay)
    raise ProviderError(f"gave up after {attempts} attempts: {last_problem}")


async def get_json(ctx: FetchContext, url: str, **kwargs: Any) -> Any:
    return decode_json(await request(ctx, "GET", url, **kwargs))


async def post_json(ctx: FetchContext, url: str, **kwargs: Any) -> Any:
    return decode_json(await request(ctx, "POST", url, **kwargs))


def decode_json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise ProviderError(
            f"invalid JSON from {response.request.method} {_safe(str(response.request.url))}: {exc}"
        ) from None


def _safe(url: str) -> str:
    """The URL without its query string: query parameters may carry API keys."""
    return url.split("?", 1)[0]


def _snippet(response: httpx.Response, limit: int = 200) -> str:
    text = response.text.strip().replace("\n", " ")
    return text[:limit] + ("…" if len(text) > limit else "")


def require(mapping: Any, key: str, where: str) -> Any:
    """Fetch a field the parser cannot do without; a missing one means the schema changed."""
    if not isinstance(mapping, dict):
        raise ProviderError(f"schema changed: expected an object at {where}, got {type(mapping).__name__}")
    if key not in mapping:
        raise ProviderError(f"schema changed: field {key!r} missing at {where}")
    return mapping[key]
