"""A provider's response is read under its `max_response_bytes`, on the wire and decompressed: an oversized,
endless or decompression-bomb body ends the fetch with ResponseTooLarge soon after the limit, having read
at most one piece past it, instead of taking the worker's memory (issue #18: a 5 GB body took it to
1.36 GB RSS, an endless chunked body to 1.18 GB, a 1 MB gzip bomb to 2.15 GB)."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from providers.adapters.aws import MAX_ROW_BYTES, REGIONS, REQUIRED, Aws
from providers.adapters.runpod import API_KEY as RUNPOD_KEY
from providers.cassette import Cassette, Interaction, ReplayTransport
from providers.contract import (
    DEFAULT_MAX_RESPONSE_BYTES,
    FetchContext,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapeResult,
)
from providers.fetching import fetch_offers
from providers.http import ACCEPT_ENCODING, ResponseTooLarge, get_json
from providers.registry import all_providers

LIMIT = 2**20  # the limit these tests give their provider
CHUNK = 2**16  # what the fake server sends at a time
PIECE = 2**16  # the most one inflate step produces (providers.http._PIECE)
URL = "https://api.example.test/v1/prices"


class RanAway(Exception):
    """The fake server's safety stop: reading this far means the client never stopped."""


class Server:
    """Bodies that count what the client pulled from them."""

    def __init__(self) -> None:
        self.sent = 0

    async def endless(self, block: bytes = b" " * CHUNK) -> AsyncIterator[bytes]:
        while True:
            if self.sent > 64 * LIMIT:
                raise RanAway(f"client read {self.sent} bytes")
            self.sent += len(block)
            await asyncio.sleep(0)  # as a socket read would, let the other requests in flight run
            yield block

    async def once(self, body: bytes) -> AsyncIterator[bytes]:
        self.sent += len(body)
        yield body


class Probe(Provider):
    name = "probe"
    title = "Probe"
    kind = ProviderKind.cloud
    max_response_bytes = LIMIT

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        await get_json(ctx, URL)
        return ScrapeResult()


def fetch(
    handler: Callable[[httpx.Request], httpx.Response], provider: type[Provider] = Probe, **credentials: str
) -> tuple[BaseException, float, int]:
    """Run `provider` through `fetch_offers` against `handler`: (what it raised, seconds, peak traced bytes)."""

    async def go() -> BaseException:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            ctx = FetchContext(client=client, credentials=credentials, retries=0, backoff_base_s=0)
            try:
                await asyncio.wait_for(fetch_offers(provider, ctx), timeout=30)
            except Exception as exc:
                return exc
        raise AssertionError("the fetch succeeded")

    tracemalloc.start()
    try:
        start = time.perf_counter()
        raised = asyncio.run(go())
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return raised, elapsed, peak


def bomb(inflated: int, coding: str = "gzip", fill: bytes = b"\0") -> bytes:
    """A small body that inflates to `inflated` bytes of `fill`."""
    wbits = {"gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS, "raw-deflate": -zlib.MAX_WBITS}[coding]
    z = zlib.compressobj(9, zlib.DEFLATED, wbits)
    block = fill * (2**20 // len(fill))
    return b"".join([*(z.compress(block) for _ in range(inflated // len(block))), z.flush()])


BOMB_SIZE = 256 * 2**20
GZIP_BOMB = bomb(BOMB_SIZE)  # about 250 KiB


def csv_bomb(inflated: int) -> bytes:
    """A gzip price list that AWS's parser would read to the end: a valid header, then rows it skips (no
    GPU instance type in them) for `inflated` bytes; any JSON adapter rejects it as well, once read."""
    header = ",".join(f'"{c}"' for c in ("SKU", *REQUIRED)).encode() + b"\n"
    row = b'"SKU0","m5.large","' + b"x" * 1000 + b'"\n'
    z = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = row * (2**20 // len(row))
    return b"".join([z.compress(header), *(z.compress(block) for _ in range(inflated // len(block))), z.flush()])


CSV_BOMB = csv_bomb(64 * LIMIT)


def assert_too_large(raised: BaseException, how: str) -> None:
    assert isinstance(raised, ResponseTooLarge), repr(raised)
    assert f"exceeds 1 MiB ({how}" in str(raised) and "max_response_bytes" in str(raised), str(raised)
    assert str(raised).startswith(f"response body from GET {URL} "), str(raised)


def test_declared_oversized_body_is_refused_unread():
    server = Server()
    raised, elapsed, _ = fetch(
        lambda r: httpx.Response(200, headers={"content-length": str(5 * 2**30)}, content=server.endless())
    )
    assert_too_large(raised, "Content-Length 5368709120 on the wire")
    assert server.sent == 0 and elapsed < 5


def test_oversized_body_stops_one_chunk_past_the_limit():
    server = Server()
    raised, elapsed, peak = fetch(lambda r: httpx.Response(200, content=server.endless()))
    assert_too_large(raised, "on the wire")
    assert LIMIT < server.sent <= LIMIT + CHUNK and elapsed < 5
    assert peak < 8 * LIMIT, peak


def test_endless_chunked_body_of_json_stops_at_the_limit():
    server = Server()
    raised, _, peak = fetch(
        lambda r: httpx.Response(
            200, headers={"content-type": "application/json"}, content=server.endless(b"[" * CHUNK)
        )
    )
    assert_too_large(raised, "on the wire")
    assert server.sent <= LIMIT + CHUNK and peak < 8 * LIMIT


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate"])
def test_decompression_bomb_stops_one_piece_past_the_limit(coding):
    server = Server()
    payload = GZIP_BOMB if coding == "gzip" else bomb(BOMB_SIZE, coding)
    header = "deflate" if coding == "raw-deflate" else coding
    raised, elapsed, peak = fetch(
        lambda r: httpx.Response(200, headers={"content-encoding": header}, content=server.once(payload))
    )
    assert_too_large(raised, "decompressed")
    assert server.sent == len(payload) < LIMIT  # small on the wire: only inflating finds it out
    assert peak < LIMIT + len(payload) + 8 * PIECE + 2**20, peak  # far below the 256 MiB it inflates to
    assert elapsed < 5


def test_bomb_inside_a_bomb_is_stopped_too():
    server = Server()
    payload = gzip.compress(GZIP_BOMB)
    raised, _, peak = fetch(
        lambda r: httpx.Response(200, headers={"content-encoding": "gzip, gzip"}, content=server.once(payload))
    )
    assert_too_large(raised, "decompressed")
    assert peak < 8 * LIMIT, peak


def test_huge_error_body_is_not_read_for_its_message():
    server = Server()
    raised, _, _ = fetch(lambda r: httpx.Response(503, content=server.endless(b"upstream down " * 4096)))
    assert str(raised) == f"gave up after 1 attempts: HTTP 503 from GET {URL}" and server.sent == 0
    server = Server()
    raised, elapsed, _ = fetch(lambda r: httpx.Response(400, content=server.endless(b"bad request " * 4096)))
    assert str(raised).startswith(f"HTTP 400 from GET {URL}: bad request bad request"), str(raised)
    assert server.sent <= 2 * CHUNK and elapsed < 5


def test_limit_is_the_providers_own(monkeypatch):
    body = json.dumps({"rows": ["x" * 1000] * 2000}).encode()  # about 2 MiB
    raised, _, _ = fetch(lambda r: httpx.Response(200, content=body))
    assert isinstance(raised, ResponseTooLarge)
    monkeypatch.setattr(Probe, "max_response_bytes", 4 * 2**20)
    with pytest.raises(AssertionError, match="the fetch succeeded"):
        fetch(lambda r: httpx.Response(200, content=body))
    assert Provider.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES == 64 * 2**20
    assert Aws.max_response_bytes > DEFAULT_MAX_RESPONSE_BYTES  # its price lists are hundreds of MB


def test_compressed_bodies_still_decode_and_only_boundable_codings_are_asked_for():
    payload = {"data": [{"gpu": "H100", "price": "2.5"}] * 500}
    seen: list[str] = []

    class Reader(Probe):
        async def fetch(self, ctx: FetchContext) -> ScrapeResult:
            for coding in ("gzip", "deflate", "raw-deflate", "identity"):
                assert await get_json(ctx, f"{URL}?coding={coding}") == payload
            return ScrapeResult()

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["accept-encoding"])
        coding = request.url.params["coding"]
        raw = json.dumps(payload).encode()
        if coding == "identity":
            return httpx.Response(200, content=raw)
        wbits = {"gzip": 31, "deflate": 15, "raw-deflate": -15}[coding]
        z = zlib.compressobj(6, zlib.DEFLATED, wbits)
        encoded = z.compress(raw) + z.flush()
        header = "deflate" if coding == "raw-deflate" else coding
        return httpx.Response(200, headers={"content-encoding": header}, content=encoded)

    with pytest.raises(AssertionError, match="the fetch succeeded"):
        fetch(handler, Reader)
    assert seen == [ACCEPT_ENCODING] * 4 and ACCEPT_ENCODING == "gzip, deflate"


def test_unknown_coding_is_refused():
    body = Server().once(b"\x1b\x00")
    raised, _, _ = fetch(lambda r: httpx.Response(200, headers={"content-encoding": "br"}, content=body))
    assert isinstance(raised, ProviderError) and "unsupported content-encoding 'br'" in str(raised)


def test_corrupt_body_is_a_provider_error():
    body = Server().once(b"\x1f\x8b\x08\x00not really gzip")
    raised, _, _ = fetch(lambda r: httpx.Response(200, headers={"content-encoding": "gzip"}, content=body))
    assert isinstance(raised, ProviderError), repr(raised)
    assert str(raised).startswith(f"undecodable gzip body from {URL}: "), str(raised)


def test_cassette_replay_is_held_to_the_limit_too():
    big = Interaction("GET", URL, None, 200, {"content-type": "application/json"}, json_body=["x" * 100] * 20_000)
    small = Interaction("GET", URL + "/small", None, 200, {}, json_body={"ok": True})

    class Two(Probe):
        async def fetch(self, ctx: FetchContext) -> ScrapeResult:
            assert await get_json(ctx, URL + "/small") == {"ok": True}
            await get_json(ctx, URL)
            return ScrapeResult()

    async def go() -> None:
        transport = ReplayTransport(Cassette("probe", [big, small]))
        async with httpx.AsyncClient(transport=transport) as client:
            # a replayed body streams as a live one does (in pieces, its length declared): refused up front
            with pytest.raises(ResponseTooLarge, match=r"exceeds 1 MiB \(Content-Length \d+ on the wire\)"):
                await fetch_offers(Two, FetchContext(client=client, retries=0, backoff_base_s=0))

    asyncio.run(go())


# --- AWS streams its price lists itself --------------------------------------------------------------


def test_aws_stream_stops_at_the_limit(monkeypatch):
    """Rows the parser skips, without end: only the size limit can stop this body."""
    monkeypatch.setattr(Aws, "max_response_bytes", LIMIT)
    raised, elapsed, peak = fetch(
        lambda r: httpx.Response(200, headers={"content-encoding": "gzip"}, content=Server().once(CSV_BOMB)), Aws
    )
    assert isinstance(raised, ResponseTooLarge) and "exceeds 1 MiB (decompressed)" in str(raised), raised
    assert "/index.csv exceeds" in str(raised)
    assert peak < 16 * LIMIT and elapsed < 10, (peak, elapsed)


def test_aws_line_without_end_is_cut_at_the_row_limit():
    server = Server()
    raised, _, peak = fetch(lambda r: httpx.Response(200, content=server.endless(b"p" * CHUNK)), Aws)
    assert isinstance(raised, ProviderError) and f"is over {MAX_ROW_BYTES} bytes" in str(raised), raised
    # each region's stream stopped just past one row's worth
    assert server.sent <= len(REGIONS) * (MAX_ROW_BYTES + 2 * CHUNK) and peak < 4 * MAX_ROW_BYTES + 8 * 2**20


# --- every adapter reads through the capped helpers ---------------------------------------------------

LIVE = sorted(name for name, cls in all_providers().items() if cls.kind != ProviderKind.static_sheet)
# Adapters that parse their JSON as it streams in (providers.http.stream_json_items): a body that is no JSON
# at all is refused at its first bytes, before the limit is reached (tests/providers/test_stream_json.py
# holds their JSON bombs to the limit).
STREAMED_JSON = {"vastai"}


@pytest.mark.parametrize("name", LIVE)
def test_no_adapter_reads_past_its_limit(name, monkeypatch):
    """A bomb for every request, whatever the adapter asks: each one stops at its limit (here 1 MiB)."""
    cls = all_providers()[name]
    monkeypatch.setattr(cls, "max_response_bytes", LIMIT)
    credentials = {c: "test-secret" for c in cls.credentials} | {RUNPOD_KEY: "test-secret"}
    raised, _, peak = fetch(
        lambda r: httpx.Response(200, headers={"content-encoding": "gzip"}, content=Server().once(CSV_BOMB)),
        cls,
        **credentials,
    )
    if name in STREAMED_JSON:
        assert isinstance(raised, ProviderError) and "invalid JSON" in str(raised), repr(raised)
    else:
        assert isinstance(raised, ResponseTooLarge), repr(raised)
    assert peak < 32 * LIMIT, peak  # several requests may be in flight at once


# --- a real HTTP/1.1 server on the loopback -------------------------------------------------------------


async def _serve(body: str) -> tuple[asyncio.Server, list[int]]:
    written = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            if body == "gzip-bomb":
                payload = GZIP_BOMB
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\n"
                    + f"content-length: {len(payload)}\r\n\r\n".encode()
                    + payload
                )
                written[0] += len(payload)
                await writer.drain()
            else:
                writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                chunk = f"{CHUNK:x}\r\n".encode() + b" " * CHUNK + b"\r\n"
                while written[0] < 256 * LIMIT:  # a bound on the test, not on the client
                    writer.write(chunk)
                    written[0] += CHUNK
                    await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, written


@pytest.mark.parametrize("body", ["endless-chunked", "gzip-bomb"])
def test_real_server(body):
    async def go() -> tuple[BaseException, int]:
        server, written = await _serve(body)
        port = server.sockets[0].getsockname()[1]

        class Local(Probe):
            async def fetch(self, ctx: FetchContext) -> ScrapeResult:
                await get_json(ctx, f"http://127.0.0.1:{port}/prices")
                return ScrapeResult()

        try:
            async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(retries=0), timeout=10) as client:
                ctx = FetchContext(client=client, retries=0, backoff_base_s=0)
                try:
                    await asyncio.wait_for(fetch_offers(Local, ctx), timeout=20)
                except Exception as exc:
                    return exc, written[0]
                raise AssertionError("the fetch succeeded")
        finally:
            server.close()
            await server.wait_closed()

    start = time.perf_counter()
    raised, written = asyncio.run(go())
    assert isinstance(raised, ResponseTooLarge), repr(raised)
    assert time.perf_counter() - start < 10
    # the server stops once the client hangs up: what it wrote is the limit plus the sockets' buffers
    assert written < 64 * LIMIT, written
