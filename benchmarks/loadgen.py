"""Loopback-only HTTP load generator: N keep-alive connections, bounded in time and in request count.

Run as its own process (python -m benchmarks.loadgen ...) so its CPU use is measured apart from the
server's and from the bench runner. Prints one JSON object: requests, errors, rate and latency
percentiles over the measured window (after a warm-up whose requests are not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import sys
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

LOOPBACK_NAMES = {"localhost"}


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _pct(ordered: list[float], q: float) -> float:
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def varied(body: Any, k: int) -> Any:
    """The k-th request's body when every request is a different job: its own token count (issue #29)."""
    return body | {"tokens": f"{7 + k * 0.0137:.4f}M"}


async def load(
    url: str,
    method: str,
    body: Any,
    concurrency: int,
    duration: float,
    warmup: float,
    max_requests: int,
    vary: bool = False,
) -> dict[str, Any]:
    if not is_loopback(url):  # never point load at anything but this machine
        raise SystemExit(f"refusing non-loopback target {url}")
    latencies: list[float] = []
    errors: dict[str, int] = {}
    issued = 0
    sent = 0  # every request, warm-up too: the k-th varied body is never sent twice
    completed_in_window = 0  # the rate counts completions inside the window, whatever their start
    # One client per connection: a single httpx client sharing a 64-connection pool spends its CPU in
    # pool bookkeeping (about 140 req/s on the reference machine against a hello world that serves 1,200),
    # which would measure the load generator instead of the server.
    clients = [
        httpx.AsyncClient(limits=httpx.Limits(max_connections=1, max_keepalive_connections=1), timeout=30.0)
        for _ in range(concurrency)
    ]
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + duration

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal issued, sent, completed_in_window
        while True:
            now = time.perf_counter()
            if now >= stop_at or issued >= max_requests:
                return
            counted = now >= measure_from
            if counted:
                issued += 1
            sent += 1
            try:
                response = await client.request(method, url, json=varied(body, sent) if vary else body)
                await response.aread()
                problem = None if response.status_code < 400 else f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                problem = type(exc).__name__
            done = time.perf_counter()
            if measure_from <= done <= stop_at:
                completed_in_window += 1
            if counted:
                latencies.append(done - now)
                if problem:
                    errors[problem] = errors.get(problem, 0) + 1

    cpu0 = time.process_time()
    try:
        await asyncio.gather(*(worker(c) for c in clients))
    finally:
        for c in clients:
            await c.aclose()
    end = time.perf_counter()
    cpu = time.process_time() - cpu0
    window = max(1e-9, min(end, stop_at) - measure_from) if end > measure_from else float("nan")
    ordered = sorted(latencies)
    return {
        "requests": len(latencies),
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "window_s": window,
        "rate": completed_in_window / window,
        "p50_ms": _pct(ordered, 50) * 1000,
        "p99_ms": _pct(ordered, 99) * 1000,
        "max_ms": (ordered[-1] if ordered else float("nan")) * 1000,
        "client_cpu_s": cpu,
        "wall_s": end - start,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--url", required=True)
    p.add_argument("--method", default="GET")
    p.add_argument("--body", default=None, help="JSON request body")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--duration", type=float, default=8.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--max-requests", type=int, default=200_000)
    p.add_argument("--vary", action="store_true", help="every request a different job (its own token count)")
    a = p.parse_args(argv)
    body = json.loads(a.body) if a.body else None
    result = asyncio.run(load(a.url, a.method, body, a.concurrency, a.duration, a.warmup, a.max_requests, a.vary))
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
