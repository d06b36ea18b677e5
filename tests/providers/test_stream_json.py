"""Large answers parsed as they stream in (providers.http.stream_json_items), as Vast's marketplace is: the
streamed parse is the non-streamed one, memory is bounded by what is kept rather than by the body, and a
body past the provider's cap, a bomb, too many items, a missing list or JSON broken mid-stream are each
refused with a clear ProviderError (no partial answer is returned, so nothing stored is touched)."""

from __future__ import annotations

import asyncio
import copy
import gzip
import json
import tracemalloc
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from providers.adapters.vastai import URL, VastAi, parse
from providers.contract import DEFAULT_MAX_RESPONSE_BYTES, FetchContext, ProviderError, ScrapeResult
from providers.fetching import fetch_offers
from providers.http import ResponseTooLarge, stream_json_items, streamed
from tests.factories.real_payloads import real_payload

REAL = "vastai/vast-cli_11ecdfa_search_trimmed.json"


async def _chunks(body: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(body), size):
        await asyncio.sleep(0)
        yield body[start : start + size]


def _fetch(handler: Callable[[httpx.Request], httpx.Response]) -> ScrapeResult:
    async def go() -> ScrapeResult:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await fetch_offers(VastAi, FetchContext(client=client, retries=0, backoff_base_s=0))

    return asyncio.run(go())


def _answer(body: bytes, *, size: int = 997, gzipped: bool = False) -> Callable[[httpx.Request], httpx.Response]:
    headers = {"content-type": "application/json"} | ({"content-encoding": "gzip"} if gzipped else {})
    content = gzip.compress(body) if gzipped else body
    return lambda request: httpx.Response(200, headers=headers, content=_chunks(content, size))


@pytest.fixture(scope="module")
def bundles() -> list[dict[str, Any]]:
    return real_payload(REAL)  # type: ignore[no-any-return]


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_streamed_vast_answer_parses_as_the_whole_body_does(bundles, gzipped):
    # Odd-sized pieces split numbers, strings and escapes across reads; the real capture's floats (7 and
    # 17 significant digits) must come out as json reads them, since kept attributes carry them as is.
    body = json.dumps({"offers": bundles}).encode()
    streamed_result = _fetch(_answer(body, gzipped=gzipped))
    whole = parse(json.loads(body))
    assert streamed_result.offers == whole.offers and len(whole.offers) > len(bundles)
    assert streamed_result.skipped == whole.skipped


def test_a_dropped_bundle_is_dropped_alike_and_the_rest_kept(bundles):
    payload = {"offers": [bundles[0], {"id": 1, "gpu_name": "RTX 4090", "dph_total": 1}, bundles[1]]}
    result = _fetch(_answer(json.dumps(payload).encode(), size=64))
    assert result.offers == parse(payload).offers and len(result.offers) >= 2
    assert any("offers[1]: dropped" in r for r in result.skipped)


def test_vast_takes_its_full_marketplace_and_memory_follows_the_batch_not_the_body(bundles, monkeypatch):
    # Vast's 200,000-offer marketplace is ~77 MB: over the default cap, well under Vast's own.
    assert VastAi.max_response_bytes >= 2**30 > 77 * 10**6 > DEFAULT_MAX_RESPONSE_BYTES
    # ~24 MB of body, most of it a field the parser does not keep: held whole, it would be the peak.
    padded = [dict(b, description="x" * 20_000) for b in bundles[:20]] * 60
    body = json.dumps({"offers": padded}).encode()
    assert len(body) > 24 * 10**6
    tracemalloc.start()
    try:
        result = _fetch(_answer(body, size=2**16))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(result.offers) >= 1200
    # The batch and a few pieces in flight; reading the body whole would alone allocate len(body).
    assert peak < len(body) / 2, peak


def test_a_body_over_the_cap_is_refused(bundles, monkeypatch):
    body = json.dumps({"offers": bundles * 40}).encode()
    monkeypatch.setattr(VastAi, "max_response_bytes", len(body) // 2)
    with pytest.raises(ResponseTooLarge, match=r"exceeds .* \(on the wire\)"):
        _fetch(_answer(body, size=2**16))
    bomb = gzip.compress(b'{"offers": [' + b" " * (len(body) * 4) + b"]}")
    with pytest.raises(ResponseTooLarge, match=r"exceeds .* \(decompressed\)"):
        _fetch(_gz(bomb))


def _gz(encoded: bytes) -> Callable[[httpx.Request], httpx.Response]:
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    return lambda request: httpx.Response(200, headers=headers, content=_chunks(encoded, 2**12))


def test_too_many_items_are_refused(bundles, monkeypatch):
    monkeypatch.setattr(VastAi, "max_bundles", 50)
    with pytest.raises(ProviderError, match=r"lists more than 50 items at 'offers'"):
        _fetch(_answer(json.dumps({"offers": bundles}).encode(), size=2**14))


def test_json_broken_mid_stream_is_a_clear_error_and_no_partial_answer(bundles):
    good = json.dumps({"offers": bundles[:30]}).encode()
    cut = good[: len(good) * 2 // 3]
    for broken in (cut, cut + b"}}garbage"):
        with pytest.raises(ProviderError, match=r"invalid JSON from POST https://console.vast.ai/.* after \d+ items"):
            _fetch(_answer(broken, size=512))


@pytest.mark.parametrize(
    ("payload", "what"),
    [({"bundles": []}, "nothing"), ({"offers": {"a": 1}}, "a map"), ({"offers": None}, "a null"), ([], "nothing")],
)
def test_an_answer_without_the_list_is_a_schema_change(payload, what):
    with pytest.raises(ProviderError, match=rf"schema changed: expected a list at 'offers' .*, got {what}"):
        _fetch(_answer(json.dumps(payload).encode()))


def test_an_empty_list_is_an_empty_batch():
    assert _fetch(_answer(b'{"offers": []}')).offers == []


def test_the_status_is_retried_before_any_body_is_read():
    calls = []

    def flaky(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx.Response(503)
        return httpx.Response(200, content=b'{"rows": [1, 2.5, "x"]}')

    async def go() -> list[Any]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(flaky)) as client:
            ctx = FetchContext(client=client, retries=1, backoff_base_s=0)
            async with streamed(ctx, "GET", URL) as response:
                return [item async for item in stream_json_items(response, "rows", 2**20, 10)]

    assert asyncio.run(go()) == [1, 2.5, "x"] and len(calls) == 2


def _items(body: bytes, size: int) -> list[Any]:
    async def go() -> list[Any]:
        transport = httpx.MockTransport(lambda r: httpx.Response(200, content=_chunks(body, size)))
        async with httpx.AsyncClient(transport=transport) as client:
            ctx = FetchContext(client=client, retries=0, backoff_base_s=0)
            async with streamed(ctx, "GET", URL) as response:
                return [item async for item in stream_json_items(response, "rows", 2**20, 1000)]

    return asyncio.run(go())


def _as_strings(node: Any) -> Any:
    """json.loads' answer with each non-finite float as the string the streaming parse gives for it."""
    if isinstance(node, float) and node != node:
        return "NaN"
    if isinstance(node, float) and node in (float("inf"), float("-inf")):
        return "Infinity" if node > 0 else "-Infinity"
    if isinstance(node, list):
        return [_as_strings(v) for v in node]
    if isinstance(node, dict):
        return {k: _as_strings(v) for k, v in node.items()}
    return node


def test_nan_and_infinity_that_python_sends_drop_their_item_not_the_answer(bundles):
    # Python's json writes and reads NaN and ±Infinity; a strict parser would refuse the whole body at
    # the first. Strings that hold those words, quotes and backslashes are left as they are, wherever
    # a piece boundary falls.
    bs, q = "\\", '"'  # one backslash, one quote: inside strings, json.dumps escapes both
    rows = [
        {"a": float("nan"), "b": "NaN", "c": f"say {q}NaN{q}, {bs}{q}Infinity{bs}{q} {bs}", "d": [float("inf"), -1.5]},
        {"e": float("-inf"), "f": bs * 2, "g": f"-Infinity{bs}{q}", "h": f"caf\u00e9 {bs}u00e9"},
        {"i": [float("nan"), {"j": float("nan")}], "k": bs * 3 + q + "NaN"},
    ]
    body = json.dumps({"rows": rows}).encode()
    assert b"NaN" in body and b"Infinity" in body
    expected = _as_strings(json.loads(body)["rows"])
    for size in (1, 2, 3, 5, 7, 64, len(body)):
        assert _items(body, size) == expected, size

    bad = copy.deepcopy(bundles[:3])
    bad[1]["dph_total"] = float("nan")
    result = _fetch(_answer(json.dumps({"offers": bad}).encode(), size=101))
    assert result.offers == parse(json.loads(json.dumps({"offers": bad}))).offers
    assert any("offers[1]: dropped" in r and "not a finite number" in r for r in result.skipped)


@pytest.mark.parametrize("trace", [False, True])
def test_a_streamed_answer_is_captured_as_the_whole_body_is(bundles, trace):
    # The drift check and the schema warnings read the capture: streaming must not blind them. Same
    # shape (counts and kinds per key path) and, when tracing, the same keys read by the parser.
    from providers.schema import Capture, capture_json

    body = json.dumps({"offers": bundles}).encode()
    with capture_json(trace=trace) as live:
        _fetch(_answer(body, size=513))
    (endpoint,) = live.endpoints()
    whole = Capture(trace=trace)
    parse(whole.seen(endpoint, json.loads(body)))
    assert live.bodies == whole.bodies == 1
    assert live.shape(endpoint) == whole.shape(endpoint)
    assert live.read_paths(endpoint) == whole.read_paths(endpoint)
    if trace:
        assert ("offers", "[]", "dph_total") in live.read_paths(endpoint)
