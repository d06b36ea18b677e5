"""The app's Prometheus registry: HTTP request metrics from a middleware, everything else from the database.

Each app gets its own registry (tests build many apps in one process; the global registry would
refuse the second set of HTTP series). Request metrics are per process, as Prometheus expects: run
several API workers and it sums them. Database-derived series come from tracker.ops.metrics at scrape time.

The route label is the route's template (`/v1/alerts/{rule_id}`), never the raw path, so series stay
bounded; requests no route matched share the label `<unmatched>`.
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

from tracker.ops.metrics import PREFIX, DatabaseCollector

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
UNMATCHED = "<unmatched>"


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
        f"{PREFIX}_http_requests", "HTTP requests served, by method, route template and status code",
        ["method", "route", "status"], registry=registry,
    )  # fmt: skip
    latency = Histogram(
        f"{PREFIX}_http_request_duration_seconds", "Time to serve an HTTP request (until the response is sent)",
        ["method", "route"], buckets=LATENCY_BUCKETS, registry=registry,
    )  # fmt: skip
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    registry.register(DatabaseCollector(app.state.engine, app.state.settings))
    app.state.metrics = AppMetrics(registry, requests, latency)
    return app.state.metrics


def _route_template(scope: Scope) -> str:
    route = scope.get("route")
    return getattr(route, "path_format", None) or getattr(route, "path", None) or UNMATCHED


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
            route, method = _route_template(scope), scope["method"]
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - started)


def install(app: FastAPI) -> None:
    """Measure every request: called by `create_app` before the app starts."""
    app.add_middleware(HttpMetricsMiddleware, metrics=metrics_for(app))


__all__ = ["AppMetrics", "HttpMetricsMiddleware", "install", "metrics_for"]
