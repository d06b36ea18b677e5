"""What one client can cost the API (issue #18): body size, error size, metric series, memo bytes.

Also the HTTP details found with them: a 405's `Allow` header, HEAD on every GET route, 422s that name
their field, and a malformed database URL at startup.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import re
import string
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import InvalidDatabaseUrl, create_app
from api.limits import DEFAULT_MAX_BODY_BYTES, MAX_ERROR_BYTES, MAX_ERRORS, RequestLimits
from providers.adapters.reference import ReferenceRates
from providers.adapters.vastai import VastAi
from providers.cassette import Cassette, bundled_cassette
from tests.factories.servers import serve
from tracker.config import Settings
from tracker.market.live import LiveOffers
from tracker.pipeline.scraping import ScrapeJob, run_scrape

JOB = {"model": "llama-3.1-8b", "tokens": "1M"}
JSON = {"content-type": "application/json"}


def unknown_keys(n: int) -> bytes:
    """A job with `n` keys no schema knows, compactly encoded (as many keys per byte as JSON allows)."""
    return json.dumps(JOB | {f"{i:x}": 0 for i in range(n)}, separators=(",", ":")).encode()


@functools.cache
def thirteen_mb() -> bytes:
    """The reported attack's size: 13 MB of unknown keys (it once took 11.6 s and answered 74 MB)."""
    return unknown_keys(1_300_000)


@pytest.fixture
def app(engine, settings):
    jobs = [ScrapeJob(ReferenceRates), ScrapeJob(VastAi, "replay", Cassette.load(bundled_cassette("vastai")))]
    asyncio.run(run_scrape(jobs, engine, settings))
    yield create_app(settings, engine)


@pytest.fixture
def client(app) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def server(app) -> Iterator[str]:
    with serve(app) as base:
        yield base


# ------------------------------------------------------------------------------------------ bodies


def test_a_13_mb_body_is_refused_at_once(server):
    body = thirteen_mb()
    assert len(body) > 13_000_000
    started = time.perf_counter()
    r = httpx.post(f"{server}/v1/estimate", content=body, headers=JSON, timeout=5)
    assert r.status_code == 413, r.text[:300]
    assert r.json()["field"] == "body" and len(r.content) < 200
    assert time.perf_counter() - started < 2


def test_a_chunked_body_is_counted_as_it_streams(client):
    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit can only count what arrives
        yield b'{"model": "llama-3.1-8b", "tokens": "1M", "pad": "'
        for _ in range(200):
            yield b"x" * (64 * 1024)
        yield b'"}'

    r = client.post("/v1/estimate", content=chunks(), headers=JSON)
    assert r.status_code == 413 and r.json() == {"detail": "request body larger than 262,144 bytes", "field": "body"}


def test_the_limit_is_configurable(engine, settings, monkeypatch):
    monkeypatch.setenv("TRACKER_API_MAX_BODY_BYTES", "4096")
    with TestClient(create_app(settings, engine)) as c:
        assert c.post("/v1/estimate", content=unknown_keys(1000), headers=JSON).status_code == 413
    with TestClient(create_app(settings, engine, limits=RequestLimits(max_body_bytes=2**20))) as c:
        assert c.post("/v1/estimate", content=unknown_keys(1000), headers=JSON).status_code == 422


def test_unknown_keys_get_a_small_422_fast(client):
    started = time.perf_counter()
    r = client.post("/v1/estimate", content=unknown_keys(5000), headers=JSON)
    elapsed = time.perf_counter() - started
    assert r.status_code == 422
    body = r.json()
    assert len(r.content) <= MAX_ERROR_BYTES, len(r.content)  # was 505 KB: one echo per key
    assert 1 <= len(body["detail"]) <= MAX_ERRORS and body["omitted"] == 5000 - len(body["detail"])
    assert body["field"] == "0" and body["detail"][0]["type"] == "extra_forbidden"
    assert elapsed < 2


def test_the_worst_body_within_the_limit_is_cheap(client):
    n = 1000
    while len(unknown_keys(n * 2)) <= DEFAULT_MAX_BODY_BYTES:
        n *= 2
    while len(unknown_keys(n + 1000)) <= DEFAULT_MAX_BODY_BYTES:
        n += 1000
    started = time.perf_counter()
    r = client.post("/v1/estimate", content=unknown_keys(n), headers=JSON)
    assert r.status_code == 422 and len(r.content) <= MAX_ERROR_BYTES and r.json()["omitted"] > 20_000
    assert time.perf_counter() - started < 2


def test_a_422_stays_small_whatever_the_keys(client):
    long_keys = {f"{i}-" + "k" * 20_000: 0 for i in range(12)}  # 240 KB of key names, within the limit
    r = client.post("/v1/estimate", content=json.dumps(JOB | long_keys), headers=JSON)
    assert r.status_code == 422 and len(r.content) <= MAX_ERROR_BYTES
    assert len(r.json()["field"]) < 300


def test_healthz_answers_while_large_requests_are_in_flight(server):
    latencies: list[float] = []
    statuses: list[int] = []
    done = threading.Event()

    def big_requests() -> None:
        with httpx.Client(base_url=server, timeout=10) as c:
            huge, worst = thirteen_mb(), unknown_keys(20_000)
            for body in (huge, worst, huge, worst, worst):
                try:
                    statuses.append(c.post("/v1/estimate", content=body, headers=JSON).status_code)
                except httpx.HTTPError:
                    statuses.append(0)
        done.set()

    worker = threading.Thread(target=big_requests, daemon=True)
    with httpx.Client(base_url=server, timeout=5) as c:
        worker.start()
        deadline = time.monotonic() + 30
        while not done.is_set() and time.monotonic() < deadline:
            started = time.perf_counter()
            try:
                assert c.get("/healthz").status_code == 200
            except httpx.TimeoutException:
                pytest.fail("/healthz did not answer within 5 s while a large request was processed")
            latencies.append(time.perf_counter() - started)
            time.sleep(0.01)
    worker.join(timeout=15)
    assert statuses == [413, 422, 413, 422, 422]
    assert latencies and max(latencies) < 1, max(latencies)


# ----------------------------------------------------------------------------------------- metrics


def _label_sets(client: TestClient) -> set[tuple[str, str]]:
    """(metric, labels) of every HTTP series, histogram buckets folded into their (method, route)."""
    found = set()
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("gpu_tracker_http_"):
            name, _, labels = line.partition("{")
            metric = "duration" if "duration" in name else "requests"
            pairs = re.findall(r'(\w+)="([^"]*)"', labels)
            found.add((metric, ",".join(f'{k}="{v}"' for k, v in sorted(pairs) if k != "le")))
    return found


def test_random_methods_and_paths_add_a_handful_of_series(client):
    rng = random.Random(18)
    client.get("/metrics")
    before = _label_sets(client)
    for _ in range(500):
        method = "".join(rng.choices(string.ascii_uppercase, k=8))
        prefix = rng.choice(["/v1/", "/static/", "/v1/alerts/", "/x/"])
        path = prefix + "".join(rng.choices(string.ascii_lowercase, k=6))
        client.request(method, path)
    added = (
        _label_sets(client)
        - before
        - {("requests", 'method="GET",route="/metrics",status="200"'), ("duration", 'method="GET",route="/metrics"')}
    )
    # Each label from a small set: method "other", a route template or <unmatched>, a known status. Before,
    # each invented method was a label value of its own: about a thousand label sets, 18 series each.
    assert len(added) <= 8, sorted(added)
    assert all('method="other"' in labels for _, labels in added)


# ------------------------------------------------------------------------------------- HTTP details


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/v1/market", "GET, HEAD"),
        ("PUT", "/v1/alerts", "GET, HEAD, POST"),
        ("POST", "/v1/alerts/3", "DELETE, GET, HEAD, PATCH"),
        ("GET", "/v1/estimate", "POST"),
        ("POST", "/healthz", "GET, HEAD"),
        ("BREW", "/v1/offers", "GET, HEAD"),
    ],
)
def test_a_405_lists_the_allowed_methods(client, method, path, allow):
    r = client.request(method, path)
    assert r.status_code == 405 and r.headers["allow"] == allow


@pytest.mark.parametrize(
    "path",
    [
        "/healthz",
        "/v1/market",
        "/v1/offers?limit=3",
        "/v1/market/history?gpu=H100",
        "/v1/providers",
        "/v1/models",
        "/v1/gpus",
        "/v1/assumptions",
        "/v1/market/overview",
        "/metrics",
        "/",
        "/static/js/api.js",
        "/openapi.json",
        "/v1/market/history",
        "/v1/nothing-here",
    ],
)
def test_head_is_served_wherever_get_is(client, path):
    get, head = client.get(path), client.head(path)
    assert head.status_code == get.status_code and head.content == b""
    assert head.headers.get("content-type") == get.headers.get("content-type")


def test_head_on_a_post_route_is_a_405(client):
    r = client.head("/v1/estimate")
    assert r.status_code == 405 and r.headers["allow"] == "POST"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "gpu"),
        ({"gpu": "H100", "interval": "1m"}, "interval"),
        ({"gpu": "H100", "format": "xml"}, "format"),
        ({"gpu": "H100", "start": "yesterday"}, "start"),
        ({"gpu": "H100", "start": "2026-01-02T00:00:00"}, "start"),
        ({"gpu": "H100", "end": "2026-01-02T00:00:00"}, "end"),
        ({"gpu": "H100", "start": "2026-02-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}, "start"),
        ({"gpu": "H100", "interval": "1h", "start": "2020-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}, "interval"),
    ],
)
def test_every_history_422_names_its_field(client, params, field):
    r = client.get("/v1/market/history", params=params)
    assert r.status_code == 422 and r.json()["field"] == field, r.text


def test_a_malformed_database_url_is_one_clear_error_at_startup(tmp_path):
    settings = Settings(data_dir=tmp_path, database_url="postgresql+psycopg://tracker:hunter2@db:port/tracker")
    with pytest.raises(InvalidDatabaseUrl) as caught:
        create_app(settings)
    message = str(caught.value)
    assert message.startswith("TRACKER_DATABASE_URL is not a usable database URL") and "\n" not in message
    assert "hunter2" not in message and caught.value.__cause__ is None and caught.value.__suppress_context__


# ---------------------------------------------------------------------------------------------- memo


def _footprint(objects: object) -> int:
    """What `objects` holds in memory, each object counted once (an independent check of the memo's sums)."""
    seen: set[int] = set()
    stack, total = [objects], 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack += [*obj.keys(), *obj.values()]
        elif isinstance(obj, list | tuple | set | frozenset):
            stack += list(obj)
        elif hasattr(obj, "__dict__") and not isinstance(obj, str | bytes):
            stack.append(vars(obj))
    return total


# The memo is the same code on either backend: 2,000 requests once, on SQLite, is enough.
@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_cache_defeating_history_requests_keep_the_memo_within_its_byte_bound(engine, client, monkeypatch):
    table = client.app.state.live
    monkeypatch.setattr(table, "max_bytes", 64 * 1024)
    # Each a new key: bounds one minute apart, in a year without data, so every answer is small and
    # the memo's cost is mostly its keys and bookkeeping, which it did not count.
    end = datetime(2021, 6, 1, tzinfo=UTC)
    for i in range(2000):
        at = end - timedelta(minutes=i)
        r = client.get(
            "/v1/market/history",
            params={"gpu": "H100", "end": at.isoformat(), "start": (at - timedelta(days=2)).isoformat()},
        )
        assert r.status_code == 200
    entries, counted = table.memo_size()
    held = _footprint(table._derived)
    assert entries > 10 and counted <= table.max_bytes
    # Counting only the bytes of encoded bodies, this memo held 4.7 times its bound.
    assert held <= table.max_bytes, (held, counted, entries)


def test_values_that_are_not_bytes_count_against_the_bound(engine):
    memo = LiveOffers(max_entries=1000, max_bytes=200_000)
    rows = [{"gpu": f"card-{i}", "note": f"{i}" + "x" * 1000} for i in range(50)]  # like snapshot rows, ~55 KB
    assert memo.memo(engine, 1, ("rows",), lambda: rows) is rows
    assert memo.memo_size()[1] >= 50_000  # was 0: only bytes were counted
    for i in range(10):
        memo.memo(engine, 1, ("rows", i), lambda: [dict(r) for r in rows])
    entries, counted = memo.memo_size()
    assert counted <= 200_000 and entries < 5
