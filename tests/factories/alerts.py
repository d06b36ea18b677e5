"""Shared pieces for the alert and worker tests: a local webhook receiver, ingest and rule helpers."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sqlalchemy import Engine, func, select

from providers.contract import ScrapedOffer, ScrapeResult
from tracker.alerts.rules import ChannelInput, RuleInput, create_rule
from tracker.catalog.gpus import get_catalog
from tracker.config import Settings
from tracker.ingest.batch import IngestReport, ingest
from tracker.storage.alert_tables import AlertEvent, AlertNotification, AlertRule
from tracker.storage.engine import session_scope
from tracker.storage.tables import ScrapeRun

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
# What the alert tests change in their settings: webhooks may reach the 127.0.0.1 receiver, retries are short.
LOCAL: dict[str, Any] = {"webhook_allow": "127.0.0.1/32", "alert_retry_base_s": 10.0, "alert_retry_max_s": 600.0}
H100 = "H100-SXM-80GB"


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A tiny webhook receiver on 127.0.0.1 that can answer an error, or go away and come back."""

    requests: list[Received] = field(default_factory=list)  # accepted deliveries (2xx answers)
    hits: int = 0  # every request, whatever the answer
    status: int = 200
    location: str | None = None
    port: int = 0
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = self.rfile.read(length)
                receiver.hits += 1
                if receiver.status < 300:
                    receiver.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.status)
                if receiver.location:
                    self.send_header("location", receiver.location)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Go away entirely: connections are refused until `start()` again (same port)."""
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def kinds(self) -> list[str]:
        return [r.json["data"]["status"] for r in self.requests]


def offer(key: str, price: str, gpu: str = H100, count: int = 1, **kw: Any) -> ScrapedOffer:
    return ScrapedOffer(key=key, gpu_name=gpu, gpu_count=Decimal(count), price_per_hour=Decimal(price), **kw)


def ingest_prices(
    engine: Engine, settings: Settings, at: Any, *offers: ScrapedOffer, provider: str = "vastai"
) -> IngestReport:
    """One successful provider batch observed at `at`."""
    with session_scope(engine) as session:
        run = ScrapeRun(provider=provider, status="running", started_at=at, source="live")
        session.add(run)
        session.flush()
        report = ingest(
            session, run, ScrapeResult(offers=list(offers)), catalog=get_catalog(), settings=settings, observed_at=at
        )
        run.finished_at = at
        return report


def failed_run(engine: Engine, provider: str, at: Any, error: str = "HTTP 503 from provider") -> None:
    with session_scope(engine) as session:
        session.add(
            ScrapeRun(provider=provider, status="failed", started_at=at, finished_at=at, error=error, source="live")
        )


def local(settings: Settings, **update: Any) -> Settings:
    """`settings` with the LOCAL alert fields (and any other `update`)."""
    return settings.model_copy(update=LOCAL | update)


def add_rule(
    engine: Engine,
    settings: Settings,
    now: Any,
    *,
    channels: list[ChannelInput] | None = None,
    cost_model: Any = None,
    **kw: Any,
) -> int:
    kw.setdefault("gpu", H100)
    kw.setdefault("condition", "below")
    with session_scope(engine) as session:
        rule = create_rule(
            session, RuleInput(channels=channels or [], **kw), now=now, settings=settings, cost_model=cost_model
        )
        return rule.id


def webhook(receiver: Receiver, secret: str = SECRET) -> list[ChannelInput]:
    return [ChannelInput("webhook", receiver.url, secret)]


def rule_state(engine: Engine, rule_id: int) -> str:
    with session_scope(engine) as session:
        return session.get_one(AlertRule, rule_id).state


def transitions(engine: Engine, rule_id: int) -> list[tuple[str, str]]:
    with session_scope(engine) as session:
        rows = session.scalars(select(AlertEvent).where(AlertEvent.rule_id == rule_id).order_by(AlertEvent.id))
        return [(e.from_state, e.to_state) for e in rows]


def outbox_count(engine: Engine, **where: Any) -> int:
    with session_scope(engine) as session:
        stmt = select(func.count()).select_from(AlertNotification)
        for k, v in where.items():
            stmt = stmt.where(getattr(AlertNotification, k) == v)
        return session.scalar(stmt) or 0
