"""The cassette format: matching rules, ordered consumption, redaction on record and on replay."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from providers.cassette import REDACTED, Cassette, CassetteMiss, RecordingTransport, ReplayTransport


def _cassette(*interactions):
    return Cassette.from_json({"provider": "x", "interactions": list(interactions)})


def _i(method, url, body=None, status=200, json_body=None, text=None):
    response = {"status": status, "headers": {}}
    if text is not None:
        response["text"] = text
    else:
        response["json"] = json_body if json_body is not None else {}
    return {"request": {"method": method, "url": url, "body": body}, "response": response}


def _send(cassette, *requests):
    async def go():
        async with httpx.AsyncClient(transport=ReplayTransport(cassette)) as client:
            return [await client.request(m, u, **kw) for m, u, kw in requests]

    return asyncio.run(go())


def test_query_params_match_as_a_set_and_redacted_matches_anything():
    c = _cassette(_i("GET", f"https://h/p?b=2&key={REDACTED}&a=1", json_body={"ok": 1}))
    (r,) = _send(c, ("GET", "https://h/p", {"params": {"a": "1", "key": "s3cret", "b": "2"}}))
    assert r.json() == {"ok": 1}
    with pytest.raises(CassetteMiss):
        _send(c, ("GET", "https://h/p", {"params": {"a": "1", "key": "x", "b": "3"}}))


def test_bodies_match_with_redacted_secrets():
    c = _cassette(
        _i("POST", "https://h/token", body={"client_id": "id", "client_secret": REDACTED}, json_body={"t": 1})
    )
    (r,) = _send(c, ("POST", "https://h/token", {"json": {"client_id": "id", "client_secret": "real"}}))
    assert r.json() == {"t": 1}
    with pytest.raises(CassetteMiss):
        _send(c, ("POST", "https://h/token", {"json": {"client_id": "other", "client_secret": "real"}}))


def test_identical_requests_consume_in_order_then_repeat_last():
    c = _cassette(_i("GET", "https://h/p", status=429), _i("GET", "https://h/p", json_body={"n": 2}))
    statuses = [r.status_code for r in _send(c, *[("GET", "https://h/p", {})] * 3)]
    assert statuses == [429, 200, 200]


def test_recording_scrubs_secrets():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"access_token": "tok-123", "echo": "key s3cret"})

    recorder = RecordingTransport(inner=httpx.MockTransport(handler), secrets=["s3cret"])

    async def go():
        async with httpx.AsyncClient(transport=recorder) as client:
            await client.post("https://h/p?api_key=s3cret&x=1", json={"client_secret": "s3cret", "n": 1})

    asyncio.run(go())
    dumped = str(recorder.cassette("x").to_json())
    assert "s3cret" not in dumped and "tok-123" not in dumped
    (interaction,) = recorder.interactions
    assert interaction.url == f"https://h/p?api_key={REDACTED}&x=1"
    assert interaction.body == {"client_secret": REDACTED, "n": 1}


def test_recording_a_gzip_response_hands_the_client_a_readable_body():
    """The recorder reads (and so decodes) the body: the response it passes on must not claim gzip."""
    import asyncio
    import gzip
    import json as json_module

    import httpx

    from providers.cassette import RecordingTransport

    payload = json_module.dumps({"offers": [1, 2, 3]}).encode()

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            content=gzip.compress(payload),
            headers={"content-type": "application/json", "content-encoding": "gzip"},
        )

    recorder = RecordingTransport(inner=httpx.MockTransport(answer))

    async def go() -> object:
        async with httpx.AsyncClient(transport=recorder) as client:
            return (await client.get("https://api.example/offers")).json()

    assert asyncio.run(go()) == {"offers": [1, 2, 3]}
    assert recorder.interactions[0].json_body == {"offers": [1, 2, 3]}


def test_a_loaded_cassette_keeps_only_bytes_and_serves_and_saves_the_same(tmp_path):
    """`Cassette.load` keeps each JSON answer as the bytes it is served as (a replayed marketplace answer
    costs several times its size as Python objects): what the client reads, and what `save` writes back,
    are what was recorded, every time it is replayed."""
    body = {"offers": [{"id": i, "price": "1.25", "gpu": "H100", "tags": [None, True, 0.5]} for i in range(50)]}
    src = tmp_path / "c.json"
    _cassette(_i("GET", "https://x.test/offers", json_body=body), _i("GET", "https://x.test/t", text="ok")).save(src)
    cassette = Cassette.load(src)
    first = cassette.interactions[0]
    assert first._json is None and first._encoded is not None  # compacted: no decoded tree held
    served = _send(cassette, ("GET", "https://x.test/offers", {}), ("GET", "https://x.test/offers", {}))
    assert [r.json() for r in served] == [body, body]
    assert served[0].headers["content-type"] == "application/json"
    assert first.json_body == body
    assert _send(cassette, ("GET", "https://x.test/t", {}))[0].text == "ok"
    out = tmp_path / "out.json"
    cassette.save(out)
    assert Cassette.load(out).to_json() == Cassette.load(src).to_json()


def test_setting_a_json_body_replaces_the_compacted_bytes():
    cassette = _cassette(_i("GET", "https://x.test/a", json_body={"v": 1}))
    interaction = cassette.interactions[0]
    interaction.compact()
    interaction.json_body = {"v": 2}
    assert _send(cassette, ("GET", "https://x.test/a", {}))[0].json() == {"v": 2}


def test_a_replayed_body_streams_in_network_sized_pieces_with_its_length_declared():
    """A large recorded answer reaches a streaming parser piece by piece, as a live one does: served in one
    piece, every item of a 200,000-offer marketplace was decoded before the first was handed on."""
    body = {"offers": [{"id": i, "pad": "x" * 200} for i in range(2_000)]}
    cassette = _cassette(_i("GET", "https://x.test/offers", json_body=body))

    async def go():
        client = httpx.AsyncClient(transport=ReplayTransport(cassette))
        async with client, client.stream("GET", "https://x.test/offers") as response:
            pieces = [piece async for piece in response.aiter_raw()]
            return response.headers["content-length"], pieces

    length, pieces = asyncio.run(go())
    whole = b"".join(pieces)
    assert int(length) == len(whole) > 4 * 64 * 1024
    assert len(pieces) == -(-len(whole) // (64 * 1024)) and max(map(len, pieces)) == 64 * 1024
    assert json.loads(whole) == body
