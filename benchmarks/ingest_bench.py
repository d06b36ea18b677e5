"""§1 Ingest of a 20,000-offer marketplace snapshot: first time, unchanged, 2 % of prices changed.

Measured: `tracker.ingest.batch.ingest` in one transaction per batch, exactly as `tracker.pipeline.scraping._ingest`
runs it (ledger row, ingest, commit), from parsed offers to committed rows.
Anchor: the fastest way to get the same rows into the same database from Python — psycopg `COPY` into a
bare table (no indexes, no constraints) on Postgres; one `executemany` INSERT transaction on SQLite.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy import Engine, select, text

from benchmarks.common import Figure, Report, StatementTimer, median_time, psycopg_dsn
from benchmarks.data import change_prices, parse_payload, vast_payload
from providers.contract import ScrapeResult
from tracker.catalog.gpus import get_catalog
from tracker.clock import utcnow
from tracker.config import Settings
from tracker.ingest.batch import IngestReport, ingest
from tracker.ingest.costs import record_cost_terms
from tracker.ingest.validate import ValidOffer, validate_batch
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, ScrapeRun

PROVIDER = "vastai"
BARE_COLUMNS = (
    "provider",
    "offer_key",
    "gpu_id",
    "gpu_family",
    "raw_gpu_name",
    "gpu_count",
    "gpu_memory_gb",
    "form_factor",
    "pricing",
    "reserved_term",
    "region",
    "instance_type",
    "available",
    "vcpus",
    "ram_gb",
    "attributes",
    "demo",
    "first_seen",
    "last_seen",
    "price_per_hour",
    "price_per_gpu_hour",
)
PG_BARE = """CREATE TABLE bench_bare_offers (
    provider varchar(64), offer_key varchar(255), gpu_id varchar(64), gpu_family varchar(64),
    raw_gpu_name varchar(255), gpu_count numeric(8,3), gpu_memory_gb numeric(8,2), form_factor varchar(32),
    pricing varchar(16), reserved_term varchar(16), region varchar(128), instance_type varchar(128),
    available boolean, vcpus numeric(8,2), ram_gb numeric(10,2), attributes json, demo boolean,
    first_seen timestamptz, last_seen timestamptz, price_per_hour numeric(14,6), price_per_gpu_hour numeric(14,6))"""
SQLITE_BARE = f"CREATE TABLE bench_bare_offers ({', '.join(BARE_COLUMNS)})"


@dataclass
class Workload:
    """Parsed batches, prepared before any timing: parsing is the provider's cost, not ingest's."""

    first: ScrapeResult
    changed: list[ScrapeResult]  # each changes `fraction` of the previous one's prices
    n_offers: int
    prices_changed: int
    valid: list[ValidOffer]  # for the anchor rows


def workload(n_offers: int, repeat: int, fraction: float = 0.02) -> Workload:
    payload = vast_payload(n_offers)
    first = parse_payload(payload)
    changed, n_changed = [], 0
    for k in range(repeat):
        payload, n_changed = change_prices(payload, fraction, seed=100 + k)
        changed.append(parse_payload(payload))
    valid = validate_batch(first, get_catalog(), Settings(), PROVIDER).valid
    return Workload(first, changed, len(first.offers), n_changed, valid)


def ingest_batch(engine: Engine, settings: Settings, result: ScrapeResult, observed_at: datetime) -> IngestReport:
    """One provider batch as the worker ingests it: ledger row, ingest, commit."""
    with session_scope(engine) as session:
        run = ScrapeRun(provider=PROVIDER, status="running", started_at=observed_at, source="live")
        session.add(run)
        session.flush()
        report = ingest(session, run, result, catalog=get_catalog(), settings=settings, observed_at=observed_at)
        run.finished_at = utcnow()
    return report


def _timed_ingest(engine: Engine, settings: Settings, result: ScrapeResult) -> tuple[float, IngestReport]:
    observed_at = utcnow()
    t = time.perf_counter()
    report = ingest_batch(engine, settings, result, observed_at)
    return time.perf_counter() - t, report


# Children first: every table ingest writes (availability and price history reference offers).
BENCH_TABLES = ("offer_cost_terms", "offer_availability", "offer_prices", "offers", "unknown_gpu_names", "scrape_runs")


def _empty(engine: Engine) -> None:
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            names = ", ".join(BENCH_TABLES)
            conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY"))
        else:
            for table in BENCH_TABLES:
                conn.execute(text(f"DELETE FROM {table}"))
        conn.execute(text("UPDATE data_version SET version = 0"))


def _bare_rows(valid: list[ValidOffer], at: datetime, sqlite: bool) -> list[tuple[Any, ...]]:
    rows = []
    for v in valid:
        s = v.scraped
        stamp: Any = at.replace(tzinfo=None).isoformat(sep=" ") if sqlite else at
        num: Any = float if sqlite else (lambda x: x)  # sqlite3 has no Decimal adapter
        rows.append(
            (
                PROVIDER,
                s.key,
                v.gpu.id,
                v.gpu.family,
                s.gpu_name,
                num(s.gpu_count),
                None if s.gpu_memory_gb is None else num(s.gpu_memory_gb),
                v.gpu.form_factor,
                s.pricing.value,
                s.reserved_term,
                s.region,
                s.instance_type,
                s.available,
                None if s.vcpus is None else num(s.vcpus),
                None if s.ram_gb is None else num(s.ram_gb),
                json.dumps(s.attributes),
                False,
                stamp,
                stamp,
                num(v.price_per_hour),
                num(v.price_per_gpu_hour),
            )
        )
    return rows


class Anchor:
    """The anchor's write of the same rows, kept ready so it can be timed right next to each ingest.

    Timing the anchor and the ingest alternately gives both the same share of whatever the noisy
    neighbours are doing at that moment, which is what keeps their ratio steady from run to run.
    """

    def __init__(self, backend: str, target: str, valid: list[ValidOffer]) -> None:
        self.backend = backend
        self.label = "COPY" if backend == "postgres" else "executemany"
        self.times: list[float] = []
        self.pg: psycopg.Connection[Any] | None = None
        self.lite: sqlite3.Connection | None = None
        self.rows = _bare_rows(valid, utcnow(), sqlite=backend != "postgres")
        if backend == "postgres":
            self.pg = psycopg.connect(psycopg_dsn(target))
            self.pg.execute(PG_BARE)
            self.pg.commit()
        else:  # same pragmas as the app's own SQLite connections (tracker.storage.engine)
            self.lite = sqlite3.connect(target)
            self.lite.execute("PRAGMA journal_mode=WAL")
            self.lite.execute("PRAGMA synchronous=NORMAL")
            self.lite.execute(SQLITE_BARE)
            self.lite.commit()

    def once(self) -> float:
        """Seconds to write every row into the bare table and commit (emptied first, untimed)."""
        if self.pg is not None:
            with self.pg.cursor() as cur:
                cur.execute("TRUNCATE bench_bare_offers")
                self.pg.commit()
                t = time.perf_counter()
                with cur.copy(f"COPY bench_bare_offers ({', '.join(BARE_COLUMNS)}) FROM STDIN") as copy:
                    for row in self.rows:
                        copy.write_row(row)
                self.pg.commit()
        else:
            assert self.lite is not None
            self.lite.execute("DELETE FROM bench_bare_offers")
            self.lite.commit()
            t = time.perf_counter()
            self.lite.executemany(
                f"INSERT INTO bench_bare_offers VALUES ({', '.join('?' * len(BARE_COLUMNS))})", self.rows
            )
            self.lite.commit()
        seconds = time.perf_counter() - t
        self.times.append(seconds)
        return seconds

    def close(self) -> None:
        for conn in (self.pg, self.lite):
            if conn is not None:
                conn.execute("DROP TABLE bench_bare_offers")
                conn.commit()
                conn.close()


def run(report: Report, backend: str, engine: Engine, work: Workload, repeat: int, sqlite_path: str = "") -> None:
    """Leaves `engine`'s database holding the live snapshot (for the API and rank sections)."""
    settings = Settings(database_url=engine.url.render_as_string(hide_password=False))
    n = work.n_offers
    anchor = Anchor(
        backend, engine.url.render_as_string(hide_password=False) if backend == "postgres" else sqlite_path, work.valid
    )
    sql = StatementTimer(engine)
    cases: dict[str, tuple[list[float], list[float], str]] = {}

    def measure(case: str, batches: list[tuple[ScrapeResult, Any]]) -> None:
        """Alternate anchor and ingest; `batches` are (batch, check on its report) in order."""
        anchors, times = [], []
        sql.reset()
        for batch, check in batches:
            anchors.append(anchor.once())
            if case == "first":
                _empty(engine)
                sql.reset()
            seconds, rep = _timed_ingest(engine, settings, batch)
            check(rep)
            times.append(seconds)
        cases[case] = (anchors, times, sql.summary(len(batches) if case != "first" else 1))

    def first_ok(rep: IngestReport) -> None:
        assert (rep.status, rep.offers_new, rep.price_rows) == ("ok", n, n), rep.as_dict()

    def unchanged_ok(rep: IngestReport) -> None:
        assert (rep.status, rep.price_rows, rep.offers_new) == ("ok", 0, 0), rep.as_dict()

    def changed_ok(rep: IngestReport) -> None:
        assert (rep.status, rep.price_rows) == ("ok", work.prices_changed), rep.as_dict()

    measure("first", [(work.first, first_ok)] * repeat)
    measure("unchanged", [(work.first, unchanged_ok)] * repeat)
    measure("2% changed", [(b, changed_ok) for b in work.changed])
    sql.close()
    anchor.close()
    _cost_terms_figure(report, backend, engine, work, repeat)

    for case, target in (("first", 0.10), ("unchanged", 0.25), ("2% changed", 0.25)):
        anchors, times, where = cases[case]
        anchor_s, seconds = statistics.median(anchors), statistics.median(times)
        rate, anchor_rate = n / seconds, len(work.valid) / anchor_s
        report.add(
            Figure(
                name=f"{backend} ingest {n:,} offers, {case}",
                value=rate,
                unit="offers/s",
                anchor=anchor_rate,
                anchor_label=anchor.label,
                anchor_unit="rows/s",
                ratio=rate / anchor_rate,
                ratio_label="x",
                target=f">= {target}x",
                ok=rate / anchor_rate >= target,
                note=f"{seconds * 1000:.0f} ms per batch vs {anchor_s * 1000:.0f} ms {anchor.label}, medians of "
                f"{len(times)} alternated; SQL per batch: {where}",
            )
        )


def _cost_terms_figure(report: Report, backend: str, engine: Engine, work: Workload, repeat: int) -> None:
    """The cost-term step of an unchanged batch alone (`tracker.ingest.costs.record_cost_terms`: read the open
    rows, digest the batch's stated terms, compare; nothing to write), as the ingests above left it. Every
    offer is compared here (none taken as stored by its observation digest, as after migration 0020 or when
    every offer's description changed): the step's cost when the digests do not spare it."""
    with session_scope(engine) as session:
        ids = dict(session.execute(select(Offer.offer_key, Offer.id).where(Offer.provider == PROVIDER)).tuples().all())
        now = utcnow()
        opened: list[int] = []
        seconds = median_time(
            lambda: opened.append(record_cost_terms(session, PROVIDER, work.valid, ids, now, None)), repeat
        )
        session.rollback()
    assert set(opened) == {0}, opened  # unchanged terms: nothing opened
    report.add(
        Figure(
            name=f"{backend} cost terms of an unchanged {work.n_offers:,}-offer batch",
            value=seconds * 1000,
            unit="ms",
            anchor=None,
            anchor_label="",
            anchor_unit="",
            ratio=float("nan"),
            ratio_label="",
            target="info",
            ok=None,
            note="record_cost_terms, every offer compared: the open rows read, each offer's stated terms digested "
            f"(memo carried from the provider's last batch) and compared; median of {repeat}",
        )
    )
