"""HTTP helpers shared by providers: retries with backoff on 429/5xx, JSON decoding with clear errors,
guarded pagination, bounded concurrency, requests spaced under a provider's documented rate limit,
response bodies read under a size limit, and error messages kept free of credentials."""

from __future__ import annotations

import asyncio
import base64
import codecs
import json as jsonlib
import random
import re
import zlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import aclosing, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar
from urllib.parse import quote, quote_plus, urlsplit

from providers.contract import FetchContext, ProviderError, ProviderUnreachable
from providers.pacing import RequestPacer

# httpx is imported where a request is made, not with the module: the registry imports every adapter
# (and so this module) for provider metadata, and a command that only reads prices needs no HTTP stack.
if TYPE_CHECKING:
    import httpx

__all__ = [
    "ACCEPT_ENCODING",
    "MAX_FAN_OUT",
    "REDACTED",
    "RETRY_STATUS",
    "QueryParams",
    "RequestPacer",
    "ResponseTooLarge",
    "backoff_delay",
    "decode_json",
    "decode_stream",
    "error_snippet",
    "fan_out",
    "gather_bounded",
    "get_json",
    "iter_body",
    "post_json",
    "post_json_items",
    "read_body",
    "redacting_secrets",
    "request",
    "require",
    "scrub_secrets",
    "secret_forms",
    "stream_json_items",
    "streamed",
    "transient_errors",
    "walk_pages",
    "without_secrets",
]

# Query values adapters send; httpx renders each with str(), so ints need no conversion first.
QueryParams: TypeAlias = Mapping[str, str | int]

RETRY_STATUS = {429, 500, 502, 503, 504}


def transient_errors() -> tuple[type[Exception], ...]:
    """Network failures worth retrying."""
    import httpx

    return (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def connect_errors() -> tuple[type[Exception], ...]:
    """Failures before any byte reached the provider: on every attempt, the network is down, not the provider."""
    import httpx

    return (httpx.ConnectError, httpx.ConnectTimeout)


REDACTED = "<redacted>"
_DEFAULT_PORTS = {"https": 443, "http": 80}
# Only the codings we can inflate a bounded piece at a time: httpx would also offer br/zstd whenever those
# packages happen to be installed, and decodes them in unbounded steps.
ACCEPT_ENCODING = "gzip, deflate"
_PIECE = 64 * 1024  # most bytes one inflate step may produce: the overshoot past a limit is one piece
_SNIPPET_READ = 4096  # bytes of an error body read for its message; the rest is never fetched

T = TypeVar("T")
K = TypeVar("K")


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _build(ctx: FetchContext, method: str, url: str, *, headers: Mapping[str, str] | None, **kw: Any) -> httpx.Request:
    """The request, asking for a compressed answer unless the caller chose an encoding itself."""
    sent = ctx.client.build_request(method, url, headers=headers, **kw)
    if not headers or not any(k.lower() == "accept-encoding" for k in headers):
        sent.headers["accept-encoding"] = ACCEPT_ENCODING
    return sent


async def _pause(ctx: FetchContext, attempt: int, hint: float | None) -> None:
    """The wait before the next attempt: the backoff, or a server's Retry-After when longer (capped)."""
    delay = backoff_delay(ctx, attempt)
    if hint is not None:
        delay = max(delay, min(hint, 60.0)) if ctx.backoff_base_s else 0.0
    await asyncio.sleep(delay)


def _gave_up(attempts: int, last_problem: str, connect_failed: bool) -> ProviderError:
    if connect_failed:
        return ProviderUnreachable(f"gave up after {attempts} attempts: {last_problem}")
    return ProviderError(f"gave up after {attempts} attempts: {last_problem}")


async def request(
    ctx: FetchContext,
    method: str,
    url: str,
    *,
    params: QueryParams | None = None,
    json: Any = None,  # any JSON-serialisable body: its shape is each provider's business
    data: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,  # a body sent byte for byte: what a request signature was computed over
) -> httpx.Response:
    """Send one request, retrying transient failures; raise ProviderError on a final failure.

    The body is read as it streams in, at most `ctx.max_response_bytes` of it (on the wire and decompressed):
    the response returned holds it already decoded."""
    attempts = ctx.retries + 1
    last_problem = ""
    connect_failed = False  # the last attempt never reached the provider
    for attempt in range(attempts):
        hint: float | None = None  # a transport failure carries no Retry-After to honour
        if ctx.pacer is not None:
            await ctx.pacer.wait()
        try:
            sent = _build(ctx, method, url, params=params, json=json, data=data, content=content, headers=headers)
            response = await ctx.client.send(sent, stream=True)
            try:
                if response.status_code in RETRY_STATUS:
                    last_problem = f"HTTP {response.status_code} from {method} {_safe(url)}"
                    hint = _retry_after(response)
                elif response.is_error:
                    snippet = await error_snippet(response, ctx)
                    raise ProviderError(f"HTTP {response.status_code} from {method} {_safe(url)}: {snippet}")
                else:
                    return _loaded(response, await read_body(response, ctx.max_response_bytes))
            finally:
                await response.aclose()
        except transient_errors() as exc:
            last_problem = f"{type(exc).__name__} on {method} {_safe(url)}"
            connect_failed = isinstance(exc, connect_errors())
        else:
            connect_failed = False
        if attempt + 1 < attempts:
            await _pause(ctx, attempt, hint)
    raise _gave_up(attempts, last_problem, connect_failed)


@asynccontextmanager
async def streamed(
    ctx: FetchContext,
    method: str,
    url: str,
    *,
    params: QueryParams | None = None,
    json: Any = None,
    headers: Mapping[str, str] | None = None,
) -> AsyncGenerator[httpx.Response, None]:
    """One request whose successful response is handed over unread, to be consumed as it streams in
    (`stream_json_items`); retried like `request` until the status line is good. A transient failure
    once the body is being read is not retried (what was read so far is the caller's, and a retry would
    repeat it): it fails the fetch with a ProviderError, as a body that never finishes must."""
    attempts = ctx.retries + 1
    last_problem = ""
    connect_failed = False
    for attempt in range(attempts):
        hint: float | None = None
        if ctx.pacer is not None:
            await ctx.pacer.wait()
        try:
            sent = _build(ctx, method, url, params=params, json=json, headers=headers)
            response = await ctx.client.send(sent, stream=True)
        except transient_errors() as exc:
            last_problem = f"{type(exc).__name__} on {method} {_safe(url)}"
            connect_failed = isinstance(exc, connect_errors())
        else:
            connect_failed = False
            if response.status_code in RETRY_STATUS:
                last_problem = f"HTTP {response.status_code} from {method} {_safe(url)}"
                hint = _retry_after(response)
                await response.aclose()
            elif response.is_error:
                try:
                    snippet = await error_snippet(response, ctx)
                finally:
                    await response.aclose()
                raise ProviderError(f"HTTP {response.status_code} from {method} {_safe(url)}: {snippet}")
            else:
                try:
                    yield response
                except transient_errors() as exc:
                    raise ProviderError(
                        f"{type(exc).__name__} while reading the body of {method} {_safe(url)}"
                    ) from None
                finally:
                    await response.aclose()
                return
        if attempt + 1 < attempts:
            await _pause(ctx, attempt, hint)
    raise _gave_up(attempts, last_problem, connect_failed)


_ESCAPE = re.compile(rb"\\[\s\S]")
_TOKEN = re.compile(rb'\\[\s\S]?|"|NaN|-?Infinity')
_TOKEN_STARTS = tuple(t[:k] for t in (b"NaN", b"Infinity", b"-Infinity") for k in range(1, len(t)))


class _NonFinite:
    """Python's `json` reads NaN, Infinity and -Infinity, and providers served by Python send them; a strict
    streaming parser refuses the whole body at the first. Outside strings each such token is rewritten as a
    string ("NaN"), which every adapter's number reading refuses just as it refuses the float `json.loads`
    gives (`providers.parsing.to_decimal`: "not a finite number"), so one such value drops its item, as it
    did before, instead of the answer. Whether the stream is inside a string is carried from piece to piece
    (quotes counted, escapes skipped), so the common piece costs a few scans in C."""

    def __init__(self) -> None:
        self.in_string = False
        self.escaped = False  # the last piece ended on a lone backslash inside a string
        self.held = b""  # a tail that may begin a token, held until the next piece says

    def feed(self, piece: bytes) -> bytes:
        data, self.held = self.held + piece, b""
        if not data:
            return data
        if b"NaN" in data or b"Infinity" in data:
            data = self._rewrite(data)
        else:
            self._advance(data)
        if not self.in_string and data.endswith(_TOKEN_STARTS):
            cut = max(len(t) for t in _TOKEN_STARTS if data.endswith(t))
            data, self.held = data[:-cut], data[-cut:]  # no quote or backslash in it: the state holds
        return data

    def flush(self) -> bytes:
        held, self.held = self.held, b""
        return held

    def _advance(self, data: bytes) -> None:
        if self.escaped:
            data, self.escaped = data[1:], False
        plain = _ESCAPE.sub(b"", data) if b"\\" in data else data
        if plain.endswith(b"\\"):
            self.escaped = True
        if plain.count(b'"') % 2:
            self.in_string = not self.in_string

    def _rewrite(self, data: bytes) -> bytes:
        out, last = [], 0
        start = 0
        if self.escaped:
            start, self.escaped = 1, False
        for m in _TOKEN.finditer(data, start):
            token = m.group()
            if token == b'"':
                self.in_string = not self.in_string
            elif token.startswith(b"\\"):
                self.escaped = len(token) == 1  # a lone backslash ends the piece
            elif not self.in_string:
                out += [data[last : m.start()], b'"', token, b'"']
                last = m.end()
        out.append(data[last:])
        return b"".join(out)


async def stream_json_items(
    response: httpx.Response, prefix: str, max_bytes: int, max_items: int
) -> AsyncGenerator[Any, None]:
    """The items of the JSON array at `prefix` (ijson's notation: "offers" is the top-level object's
    "offers"), each yielded as soon as the body has brought it in, so memory holds one piece of the body
    and what the caller keeps of the items, never the whole answer (Vast's 200,000-offer marketplace is
    ~77 MB of JSON and several times that as Python objects). Numbers are read as `json` reads them (ints
    and floats), so an item is what `decode_json` would have given, but for NaN and ±Infinity, which come
    as strings (`_NonFinite`).

    Refused with a ProviderError: a body past `max_bytes` on the wire or decompressed (`iter_body`), more
    than `max_items` items (a body of tiny items would otherwise cost far more as objects than as bytes),
    JSON that breaks off or turns malformed (the message says how many items were read before; the
    caller gets no partial answer, as its fetch raises), and an answer with no array at `prefix`."""
    import ijson

    where = f"{response.request.method} {_safe(str(response.request.url))}"
    found = ijson.sendable_list()
    items = ijson.items_coro(found, f"{prefix}.item", use_float=True)
    # The envelope: is there an array at `prefix`? Read from the events until that value starts, then
    # no further (the C parser's events before it are few when, as in Vast's answer, it comes first).
    events = ijson.sendable_list()
    shape: Any = ijson.parse_coro(events)
    started: str | None = None
    count = 0
    tokens = _NonFinite()

    def take(piece: bytes) -> list[Any]:
        nonlocal shape, started, count
        if not piece:  # an empty send would tell the parsers the body has ended
            return []
        if shape is not None:
            shape.send(piece)
            started = next((event for path, event, _ in events if path == prefix), None)
            del events[:]
            if started is not None:
                shape = None
        items.send(piece)
        count += len(found)
        if count > max_items:
            raise ProviderError(f"response from {where} lists more than {max_items:,} items at {prefix!r}")
        done = list(found)
        del found[:]
        return done

    try:
        async for raw in iter_body(response, max_bytes):
            for item in take(tokens.feed(raw)):
                yield item
        for item in take(tokens.flush()):
            yield item
        items.close()
        count += len(found)
        for item in found:  # the last item ends with the body's last piece
            yield item
    except ijson.JSONError as exc:
        raise ProviderError(f"invalid JSON from {where} after {count:,} items at {prefix!r}: {exc}") from None
    if started != "start_array":
        what = "nothing" if started is None else f"a {started.removeprefix('start_')}"
        raise ProviderError(f"schema changed: expected a list at {prefix!r} in the response from {where}, got {what}")


async def post_json_items(
    ctx: FetchContext, url: str, prefix: str, *, json: Any = None, max_items: int = 10_000_000
) -> AsyncGenerator[Any, None]:
    """POST, then the items of the JSON array at `prefix` as they stream in (`stream_json_items`), the
    body read under `ctx.max_response_bytes`."""
    async with (
        streamed(ctx, "POST", url, json=json) as response,
        aclosing(stream_json_items(response, prefix, ctx.max_response_bytes, max_items)) as items,
    ):
        # Looked up once per answer, as `get_json` looks up `decode_json` per call: the schema capture
        # (`providers.schema`) replaces it to see a streamed answer item by item, as it sees a whole body.
        observe = decode_stream(response, prefix)
        async for item in items:
            yield observe(item)


def decode_stream(response: httpx.Response, prefix: str) -> Callable[[Any], Any]:
    """What each item streamed from the array at `prefix` of `response` passes through before the adapter
    gets it: as it came, unless a schema capture is active (`providers.schema.capture_json`)."""
    return _as_is


def _as_is(item: Any) -> Any:
    return item


def _loaded(response: httpx.Response, body: bytes) -> httpx.Response:
    """A response holding `body`, already decoded: its coding and length headers would describe the wire."""
    import httpx

    dropped = {"content-encoding", "content-length", "transfer-encoding"}
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in dropped]
    return httpx.Response(
        response.status_code, headers=headers, content=body, request=response.request, extensions=response.extensions
    )


class ResponseTooLarge(ProviderError):
    """A body past the provider's `max_response_bytes`: reading stopped there."""


def _too_large(response: httpx.Response, limit: int, how: str) -> ResponseTooLarge:
    where = f"{response.request.method} {_safe(str(response.request.url))}"
    return ResponseTooLarge(
        f"response body from {where} exceeds {_size(limit)} ({how}); provider limit max_response_bytes"
    )


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} bytes"


class _Inflater:
    """gzip or deflate, inflated at most `_PIECE` bytes per step so that a bomb is stopped early, not after
    the whole expansion of the chunk that carried it is in memory."""

    def __init__(self, coding: str, where: str) -> None:
        self.coding, self.where = coding, where
        self.raw_deflate_tried = coding != "deflate"
        self.started = False
        self.zobj = zlib.decompressobj(zlib.MAX_WBITS | 16 if coding != "deflate" else zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        while not self.zobj.eof:
            try:
                piece = self.zobj.decompress(data, _PIECE)
            except zlib.error as exc:
                if not self.started and not self.raw_deflate_tried:
                    # "deflate" is often sent as a bare deflate stream, without the zlib header (as httpx allows)
                    self.raw_deflate_tried = True
                    self.zobj = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise ProviderError(f"undecodable {self.coding} body from {self.where}: {exc}") from None
            self.started = True
            data = self.zobj.unconsumed_tail
            if piece:
                yield piece
            if not data and len(piece) < _PIECE:  # input used up and nothing held back
                return


def _decoders(response: httpx.Response) -> list[_Inflater]:
    codings = [c.strip().lower() for c in response.headers.get("content-encoding", "").split(",")]
    where = _safe(str(response.request.url))
    decoders = []
    for coding in reversed(codings):  # applied in the order listed, so undone from the last
        if coding in {"", "identity"}:
            continue
        if coding not in {"gzip", "x-gzip", "deflate"}:
            raise ProviderError(f"unsupported content-encoding {coding!r} from {where}")
        decoders.append(_Inflater("deflate" if coding == "deflate" else "gzip", where))
    return decoders


def _decode(decoders: list[_Inflater], data: bytes) -> Iterator[bytes]:
    if not decoders:
        if data:
            yield data
        return
    first, rest = decoders[0], decoders[1:]
    for piece in first.feed(data):
        yield from _decode(rest, piece)


async def iter_body(response: httpx.Response, limit: int) -> AsyncGenerator[bytes, None]:
    """The decoded body of a streamed response, piece by piece; raises ResponseTooLarge as soon as more than
    `limit` bytes came over the wire or came out of decompression (so at most one piece past it is read)."""
    import httpx

    if response.is_stream_consumed:
        # A transport that read the body itself (to hold its connection slot until done) leaves nothing to
        # stream: the decoded body is in memory already, and the limit can only be checked after the fact.
        try:
            body = response.content
        except httpx.ResponseNotRead:
            raise ProviderError(f"response body from {_safe(str(response.request.url))} was already consumed") from None
        if len(body) > limit:
            raise _too_large(response, limit, "decompressed")
        for start in range(0, len(body), _PIECE):
            yield body[start : start + _PIECE]
        return
    declared = response.headers.get("content-length", "")
    if declared.strip().isdigit() and int(declared) > limit:
        raise _too_large(response, limit, f"Content-Length {declared.strip()} on the wire")
    decoders = _decoders(response)
    wire = decoded = 0
    async for raw in response.aiter_raw():
        wire += len(raw)
        if wire > limit:
            raise _too_large(response, limit, "on the wire")
        for piece in _decode(decoders, raw):
            decoded += len(piece)
            if decoded > limit:
                raise _too_large(response, limit, "decompressed")
            yield piece


async def read_body(response: httpx.Response, limit: int) -> bytes:
    """The whole decoded body of a streamed response, refusing more than `limit` bytes (see `iter_body`)."""
    return b"".join([piece async for piece in iter_body(response, limit)])


async def error_snippet(response: httpx.Response, ctx: FetchContext, limit: int = 200) -> str:
    """The start of an error body, for the message: read no further than needed, with `ctx`'s credentials
    blanked out before it is cut short (a cut could otherwise keep half a key that no longer matches)."""
    head = b""
    try:
        async with aclosing(iter_body(response, ctx.max_response_bytes)) as pieces:
            async for piece in pieces:
                head += piece
                if len(head) >= _SNIPPET_READ:
                    break
    except ProviderError:
        pass  # a broken error body still leaves the status to report
    try:
        text = head[:_SNIPPET_READ].decode(codecs.lookup(response.charset_encoding or "utf-8").name, "replace")
    except LookupError:
        text = head[:_SNIPPET_READ].decode("utf-8", "replace")
    text = scrub_secrets(text.strip().replace("\n", " "), secret_forms(ctx.credentials.values()))
    return text[:limit] + ("…" if len(text) > limit else "")


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
    content: bytes | None = None,
) -> Any:
    response = await request(ctx, "POST", url, params=params, json=json, data=data, headers=headers, content=content)
    return decode_json(response)


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


# The most requests one fetch fans out to from what a listing names (types, locations × GPU counts): past
# it a listing is no real catalog (hundreds of types at most), and each request is authenticated and paced.
MAX_FAN_OUT = 256


def fan_out(keys: Iterable[K], what: str, cap: int = MAX_FAN_OUT) -> list[K]:
    """The distinct `keys`, in order, one fetch sends a request for each: a listing that repeats a type asks
    once. More than `cap` distinct ones is refused (ProviderError) before any request is sent."""
    distinct = list(dict.fromkeys(keys))
    if len(distinct) > cap:
        raise ProviderError(f"{what}: {len(distinct):,} distinct requests to fan out to; at most {cap} are sent")
    return distinct


async def gather_bounded(jobs: Iterable[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    """Run job factories at most `limit` at a time, results in order; the first failure cancels the rest.
    At most MAX_FAN_OUT jobs (callers dedupe with `fan_out` first): the backstop for every adapter."""
    jobs = list(jobs)
    if len(jobs) > MAX_FAN_OUT:
        raise ProviderError(f"{len(jobs):,} requests to fan out to; at most {MAX_FAN_OUT} are sent")
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


def secret_forms(secrets: Iterable[str]) -> list[str]:
    """Every form in which a server may echo a secret back: as is; URL-encoded (either hex case, `+` or
    `%20` for a space); JSON- or repr-escaped; base64 (standard or URL-safe, padded or not) of the secret
    and of Basic-auth `user:password` pairs made of the secrets; and the run of base64 characters that the
    secret alone decides, at each of the 3 alignments, inside any larger base64 text (a Basic header with
    some other user name). Longest first, so that no form is replaced half-way by a shorter one."""
    values = [v for v in dict.fromkeys(secrets) if v]
    forms: set[str] = set()
    for value in values:
        escaped = {value, quote(value, safe=""), quote(value), quote_plus(value, safe="")}
        escaped |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), f) for f in escaped}
        forms |= escaped | {jsonlib.dumps(value)[1:-1], repr(value)[1:-1]}
        raw = value.encode()
        encoded_forms: set[str] = set()
        for shift in range(3):
            encoded = base64.b64encode(b"\0" * shift + raw).decode()
            first = 4 if shift else 0  # the group holding the filler bytes
            last = 4 * ((shift + len(raw)) // 3)  # the end of the last group made of the secret alone
            encoded_forms.add(encoded[first:last])
        pairs = [(u, p) for u in ["", *values] for p in ["", *values] if (u or p) and value in (u, p)]
        for blob in [raw] + [f"{u}:{p}".encode() for u, p in pairs]:
            encoded = base64.b64encode(blob).decode()
            encoded_forms |= {encoded, encoded.rstrip("=")}
        encoded_forms |= {f.translate(str.maketrans("+/", "-_")) for f in encoded_forms}  # URL-safe base64
        # A short run of base64 would blank out unrelated text; a real key encodes to far more than 8.
        forms |= {f for f in encoded_forms if len(f) >= 8}
    return sorted((f for f in forms if f), key=len, reverse=True)


def scrub_secrets(text: str, forms: Iterable[str]) -> str:
    """`text` with each of `forms` (from `secret_forms`, longest first) blanked out."""
    for form in forms:
        text = text.replace(form, REDACTED)
    return text


def without_secrets(exc: ProviderError, *secrets: str) -> ProviderError:
    """The same error with every secret, in any form it may be echoed in, blanked out of its message (the
    error itself when none occurs)."""
    message = str(exc)
    cleaned = scrub_secrets(message, secret_forms(secrets))
    return exc if cleaned == message else type(exc)(cleaned)


@contextmanager
def redacting_secrets(*secrets: str) -> Iterator[None]:
    """Re-raise a ProviderError from the block with every secret blanked out, should a server ever echo a
    credential back: the message is shown to operators.

    `providers.fetching.fetch_offers` already does this for the credentials in the context; an adapter
    needs this only for secrets it derives itself (an OAuth token), or to be safe when run without it."""
    try:
        yield
    except ProviderError as exc:
        raise without_secrets(exc, *secrets) from None
