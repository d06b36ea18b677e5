"""HTTP helpers shared by providers: retries with backoff on 429/5xx, JSON decoding with clear errors,
guarded pagination, bounded concurrency, and error messages kept free of credentials."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeAlias, TypeVar
from urllib.parse import urlsplit

import httpx

from providers.contract import FetchContext, ProviderError

__all__ = [
    "REDACTED",
    "RETRY_STATUS",
    "TRANSIENT_ERRORS",
    "QueryParams",
    "backoff_delay",
    "decode_json",
    "gather_bounded",
    "get_json",
    "post_json",
    "redacting_secrets",
    "request",
    "require",
    "walk_pages",
    "without_secrets",
]

# Query values adapters send; httpx renders each with str(), so ints need no conversion first.
QueryParams: TypeAlias = Mapping[str, str | int]

RETRY_STATUS = {429, 500, 502, 503, 504}
TRANSIENT_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
REDACTED = "<redacted>"
_DEFAULT_PORTS = {"https": 443, "http": 80}

T = TypeVar("T")


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
    params: QueryParams | None = None,
    json: Any = None,  # any JSON-serialisable body: its shape is each provider's business
    data: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> httpx.Response:
    """Send one request, retrying transient failures; raise ProviderError on a final failure."""
    attempts = ctx.retries + 1
    last_problem = ""
    for attempt in range(attempts):
        hint: float | None = None  # a transport failure carries no Retry-After to honour
        try:
            response = await ctx.client.request(method, url, params=params, json=json, data=data, headers=headers)
        except TRANSIENT_ERRORS as exc:
            last_problem = f"{type(exc).__name__} on {method} {_safe(url)}"
        else:
            if response.status_code not in RETRY_STATUS:
                if response.is_error:
                    raise ProviderError(f"HTTP {response.status_code} from {method} {_safe(url)}: {_snippet(response)}")
                return response
            last_problem = f"HTTP {response.status_code} from {method} {_safe(url)}"
            hint = _retry_after(response)
        if attempt + 1 < attempts:
            delay = backoff_delay(ctx, attempt)
            if hint is not None:
                delay = max(delay, min(hint, 60.0)) if ctx.backoff_base_s else 0.0
            await asyncio.sleep(delay)
    raise ProviderError(f"gave up after {attempts} attempts: {last_problem}")


def backoff_delay(ctx: FetchContext, attempt: int) -> float:
    """Seconds to wait before retry number `attempt + 1`: exponential, with up to 25% jitter."""
    # A float base: int ** int is typed Any (a negative exponent would give a float).
    return ctx.backoff_base_s * (2.0**attempt) * (1 + random.random() / 4)


async def get_json(
    ctx: FetchContext,
    url: str,
    *,
    params: QueryParams | None = None,
    json: Any = None,
    data: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Any:
    return decode_json(await request(ctx, "GET", url, params=params, json=json, data=data, headers=headers))


async def post_json(
    ctx: FetchContext,
    url: str,
    *,
    params: QueryParams | None = None,
    json: Any = None,
    data: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Any:
    return decode_json(await request(ctx, "POST", url, params=params, json=json, data=data, headers=headers))


def decode_json(response: httpx.Response) -> Any:
    """The decoded body. Any on purpose: this is the JSON boundary, and each adapter checks the shape it
    reads field by field (`require`, `as_list`, `to_decimal`) with errors that name the place."""
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


async def walk_pages(
    fetch: Callable[[str], Awaitable[Any]],
    read: Callable[[Any, int], str | None],
    *,
    what: str,
    max_pages: int,
    first: str = "",
    origin: str | None = None,
) -> None:
    """Fetch and read every page of a paginated listing: `read(await fetch(first), 1)` returns the next
    page's link or cursor, `read(await fetch(that), 2)` the one after, and so on until `read` returns none.

    A listing that never ends must not keep us fetching: a next page named twice, or one past `max_pages`,
    raises ProviderError. With `origin` ("https://host"), a next link must stay on it: our credentials
    travel with the request."""
    seen = {first}
    cursor = first
    for page in range(1, max_pages + 1):
        cursor = read(await fetch(cursor), page) or ""
        if not cursor:
            return
        if origin is not None and not _same_origin(cursor, origin):
            raise ProviderError(f"next page of {what} is outside {origin}: {_safe(cursor)}")
        if cursor in seen:
            raise ProviderError(f"pagination did not end: page {page} of {what} links back to an earlier page")
        seen.add(cursor)
    raise ProviderError(f"pagination did not end after {max_pages} pages of {what}")


def _same_origin(url: str, origin: str) -> bool:
    """Same scheme, host and port (a default port written out or not)."""

    def key(u: str) -> tuple[str, str | None, int | None]:
        parts = urlsplit(u)
        return parts.scheme.lower(), parts.hostname, parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())

    try:
        return key(url) == key(origin)
    except ValueError:  # an unreadable port
        return False


async def gather_bounded(jobs: Iterable[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    """Run job factories at most `limit` at a time, results in order; the first failure cancels the rest."""
    gate = asyncio.Semaphore(limit)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    tasks = [asyncio.ensure_future(one(job)) for job in jobs]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def without_secrets(exc: ProviderError, *secrets: str) -> ProviderError:
    """The same error with every secret blanked out of its message (the error itself when none occurs)."""
    message = str(exc)
    cleaned = message
    for secret in secrets:
        if secret:
            cleaned = cleaned.replace(secret, REDACTED)
    return exc if cleaned == message else type(exc)(cleaned)


@contextmanager
def redacting_secrets(*secrets: str) -> Iterator[None]:
    """Re-raise a ProviderError from the block with every secret blanked out, should a server ever echo a
    credential back: the message is shown to operators."""
    try:
        yield
    except ProviderError as exc:
        raise without_secrets(exc, *secrets) from None
