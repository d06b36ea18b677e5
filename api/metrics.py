"""The app's Prometheus registry: HTTP request metrics from a middleware, everything else from the database.

Each app gets its own registry (tests build many apps in one process; the global registry would
refuse the second set of HTTP series). Request metrics are per process, as Prometheus expects: run
several API workers and it sums them. Database-derived series come from tracker.ops.metrics at scrape time.

Every label comes from a known, small set, so no client can add series: the route label is the
route's template (`/v1/alerts/{rule_id}`), never the raw path, and requests no route matched share
`<unmatched>`; the method is one of the standard methods or `other` (servers accept any token as a
method: 5,000 invented ones once added 90,000 series); the status is the code when it is one this API
sends, else its class (`5xx`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from fastapi import FastAPI
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.methods import STANDARD_METHODS, request_method
from tracker.ops.metrics import PREFIX, DatabaseCollector

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
UNMATCHED = "<unmatched>"
OTHER_METHOD = "other"
_METHODS = frozenset(STANDARD_METHODS)
# Codes this API (or the server in front of it) sends; any other is counted under its class.
KNOWN_STATUSES = frozenset({200, 201, 204, 206, 304, 400, 401, 403, 404, 405, 409, 413, 415, 422, 429, 500, 503, 504})


@dataclass
class AppMetrics:
    registry: CollectorRegistry
    requests: Counter
    latency: Histogram


def metrics_for(app: FastAPI) -> AppMetrics:
    """The app's registry, built on first use."""
    existing: AppMetrics | None = getattr(app.state, "metrics", None)
    if existing is not None:
        return existing
    registry = CollectorRegistry()
    requests = Counter(
        f"{PREFIX}_http_requests",
        "HTTP requests served, by method, route template and status code",
        ["method", "route", "status"],
        registry=registry,
    )
    latency = Histogram(
        f"{PREFIX}_http_request_duration_seconds",
        "Time to serve an HTTP request (until the response is sent)",
        ["method", "route"],
        buckets=LATENCY_BUCKETS,
        registry=registry,
    )
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    registry.register(DatabaseCollector(app.state.engine, app.state.settings))
    built = app.state.metrics = AppMetrics(registry, requests, latency)
    return built


def _route_template(scope: Scope) -> str:
    route = scope.get("route")
    return getattr(route, "path_format", None) or getattr(route, "path", None) or UNMATCHED


def method_label(method: str) -> str:
    return method if method in _METHODS else OTHER_METHOD


def status_label(status: int) -> str:
    return str(status) if status in KNOWN_STATUSES else f"{status // 100}xx"


class HttpMetricsMiddleware:
    """Pure ASGI (not BaseHTTPMiddleware), so streamed responses are not buffered to be measured."""

    def __init__(self, app: ASGIApp, metrics: AppMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if the app raises before starting a response

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            # The router records the matched route in the scope; read it after the app has run.
            route, method = _route_template(scope), method_label(request_method(scope))
            self.metrics.requests.labels(method, route, status_label(status)).inc()
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - started)


def install(app: FastAPI) -> None:
    """Measure every request: called by `create_app` before the app starts."""
    app.add_middleware(HttpMetricsMiddleware, metrics=metrics_for(app))


__all__ = ["AppMetrics", "HttpMetricsMiddleware", "install", "method_label", "metrics_for", "status_label"]
