"""§2 History at scale: a year of hourly scrapes of 2,000 offers with 2 % of prices changing each hour.

Writing 8,760 batches through ingest would take most of the time budget, so the year is bulk-loaded
with the exact change-only semantics (benchmarks.data.history_rows: [valid_from, valid_to), one open row
per offer, ingest's rounding), and the first hours of the same plan are replayed through the real
`tracker.ingest.batch.ingest` into a separate database and compared row for row: the bulk year is what
ingest would have stored, and the replay also gives the time of one hourly 2,000-offer ingest.

Figures: rows stored against a snapshot-per-scrape design, the database size against that design's
projected size (bytes per row measured on a sample table in the same database), and the time of
`GET /v1/market/history` for one card against the time it takes just to read the rows it is computed
from out of the database.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import time
import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import psycopg
from sqlalchemy import Engine, insert, select, text

from api.app import create_app
from benchmarks.common import Figure, Report, psycopg_dsn
from benchmarks.data import HistoryPlan, PriceRow, final_prices, history_rows, parse_payload, plan_history, vast_payload
from benchmarks.ingest_bench import PROVIDER, ingest_batch
from tracker.catalog.gpus import get_catalog
from tracker.clock import utcnow
from tracker.config import Settings
from tracker.ingest.apply import offer_values
from tracker.ingest.validate import ValidOffer, validate_batch
from tracker.market.service import market_history
from tracker.storage.engine import make_engine, session_scope
from tracker.storage.partitions import ensure_partitions
from tracker.storage.tables import Base, Offer, OfferPrice

TABLES = Base.metadata.tables
CARD = "H100-SXM-80GB"
PRICING = "on_demand"
OFFER_COLUMNS = (
    "id",
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
    "delisted_at",
    "price_per_hour",
    "price_per_gpu_hour",
)
PRICE_COLUMNS = (
    "id",
    "offer_id",
    "gpu_id",
    "pricing",
    "valid_from",
    "valid_to",
    "price_per_hour",
    "price_per_gpu_hour",
    "run_id",
)
RUN_COLUMNS = (
    "id",
    "provider",
    "source",
    "status",
    "started_at",
    "finished_at",
    "observed_at",
    "offers_seen",
    "offers_valid",
    "offers_new",
    "price_rows",
    "offers_closed",
    "offers_reopened",
    "unknown_names",
    "invalid_offers",
    "parser_version",
)


@dataclass
class Year:
    plan: HistoryPlan
    valid: list[ValidOffer]
    rows: list[PriceRow]
    hours: int


def build_year(n_offers: int, hours: int, change_rate: float) -> Year:
    base = parse_payload(vast_payload(n_offers, seed=21)).offers
    valid = validate_batch(parse_payload(vast_payload(n_offers, seed=21)), get_catalog(), Settings(), PROVIDER).valid
    plan = plan_history(base, hours, change_rate, end=utcnow())
    return Year(plan, valid, history_rows(plan, hours, valid), hours)


def _tables(year: Year, hours: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """scrape_runs, offers and offer_prices rows (as dicts keyed by column) for the first `hours` hours."""
    plan, last = year.plan, year.plan.at(hours - 1)
    counts = [len(c) for c in plan.changes[:hours]]
    runs = [
        {
            "id": h + 1,
            "provider": PROVIDER,
            "source": "live",
            "status": "ok",
            "started_at": plan.at(h),
            "finished_at": plan.at(h) + timedelta(seconds=2),
            "observed_at": plan.at(h),
            "offers_seen": len(plan.base),
            "offers_valid": len(plan.base),
            "offers_new": len(plan.base) if h == 0 else 0,
            "price_rows": len(plan.base) if h == 0 else counts[h],
            "offers_closed": 0,
            "offers_reopened": 0,
            "unknown_names": 0,
            "invalid_offers": 0,
            "parser_version": "1",
        }
        for h in range(hours)
    ]
    prices = final_prices(plan, hours)
    offers = []
    for i, v in enumerate(year.valid):
        values = offer_values(v, demo=False)
        values["price_per_hour"] = prices[i]
        values["price_per_gpu_hour"] = _per_gpu(prices[i], v)
        offers.append(
            {
                "id": i + 1,
                "provider": PROVIDER,
                "offer_key": v.scraped.key,
                "first_seen": plan.t0,
                "last_seen": last,
                "delisted_at": None,
            }
            | values
        )
    rows = year.rows if hours == year.hours else history_rows(plan, hours, year.valid)
    price_rows = [
        {
            "id": n + 1,
            "offer_id": r.offer + 1,
            "gpu_id": year.valid[r.offer].gpu.id,
            "pricing": year.valid[r.offer].scraped.pricing.value,
            "valid_from": r.valid_from,
            "valid_to": r.valid_to,
            "price_per_hour": r.price_per_hour,
            "price_per_gpu_hour": r.price_per_gpu_hour,
            "run_id": r.hour + 1,
        }
        for n, r in enumerate(rows)
    ]
    return runs, offers, price_rows


def _per_gpu(price: Decimal, v: ValidOffer) -> Decimal:
    from tracker.money import to_money as money

    return money(price / v.scraped.gpu_count)


def load_pg(url: str, year: Year) -> float:
    """COPY the year into a migrated database; seconds taken."""
    runs, offers, prices = _tables(year, year.hours)
    t = time.perf_counter()
    # On a partitioned schema (migration 0018) the year's months exist before its rows arrive, as a year of
    # the worker's daily upkeep would have made them (else they would all pass through DEFAULT).
    engine = make_engine(url)
    ensure_partitions(engine, utcnow(), since=year.plan.at(0))
    engine.dispose()
    with psycopg.connect(psycopg_dsn(url)) as conn, conn.cursor() as cur:
        for table, columns, rows in (
            ("scrape_runs", RUN_COLUMNS, runs),
            ("offers", OFFER_COLUMNS, offers),
            ("offer_prices", PRICE_COLUMNS, prices),
        ):
            with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row([json.dumps(row[c]) if c == "attributes" else row[c] for c in columns])
            # Later ingests must get fresh ids after the explicit ones.
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), %s)", (len(rows),))
        cur.execute("UPDATE data_version SET version = %s, changed_at = %s", (year.hours, year.plan.at(year.hours - 1)))
        conn.commit()
    with psycopg.connect(psycopg_dsn(url), autocommit=True) as conn:
        # A year-old table has statistics: autovacuum would have analysed it long before anyone asks.
        conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - t


def load_sqlite(engine: Engine, year: Year) -> float:
    """Through SQLAlchemy Core, so every value is stored exactly as the app's own writes store it."""
    runs, offers, prices = _tables(year, year.hours)
    t = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(insert(TABLES["scrape_runs"]), runs)
        conn.execute(insert(TABLES["offers"]), offers)
        for i in range(0, len(prices), 50_000):
            conn.execute(insert(TABLES["offer_prices"]), prices[i : i + 50_000])
        conn.execute(text("UPDATE data_version SET version = :v"), {"v": year.hours})
    with engine.connect() as conn:
        conn.execute(text("ANALYZE"))
        conn.commit()
    return time.perf_counter() - t


def verify_against_ingest(engine: Engine, year: Year, hours: int) -> tuple[int, int, float, list[str]]:
    """Replay the first `hours` scrapes through the real ingest; compare with the bulk rows.

    Returns (rows that match, rows expected, median seconds per hourly ingest, differences).
    """
    settings = Settings(database_url=engine.url.render_as_string(hide_password=False))
    times = []
    for at, batch in year.plan.batches(hours):
        t = time.perf_counter()
        report = ingest_batch(engine, settings, batch, at)
        times.append(time.perf_counter() - t)
        assert report.status == "ok", report.as_dict()
    _, offers, prices = _tables(year, hours)
    key_of = {o["id"]: o["offer_key"] for o in offers}
    expected = {
        (
            key_of[p["offer_id"]],
            p["gpu_id"],
            p["pricing"],
            p["valid_from"],
            p["valid_to"],
            p["price_per_hour"],
            p["price_per_gpu_hour"],
        )
        for p in prices
    }
    with session_scope(engine) as s:
        stored = {
            tuple(r)
            for r in s.execute(
                select(
                    Offer.offer_key,
                    OfferPrice.gpu_id,
                    OfferPrice.pricing,
                    OfferPrice.valid_from,
                    OfferPrice.valid_to,
                    OfferPrice.price_per_hour,
                    OfferPrice.price_per_gpu_hour,
                ).join(Offer, Offer.id == OfferPrice.offer_id)
            )
        }
        live = {
            r.offer_key: (r.first_seen, r.last_seen, r.price_per_hour, r.price_per_gpu_hour, r.delisted_at)
            for r in s.execute(select(Offer)).scalars().all()
        }
    diffs = [f"missing {e}" for e in sorted(expected - stored, key=str)[:3]]
    diffs += [f"unexpected {e}" for e in sorted(stored - expected, key=str)[:3]]
    for o in offers:
        want = (o["first_seen"], o["last_seen"], o["price_per_hour"], o["price_per_gpu_hour"], None)
        if live.get(o["offer_key"]) != want:
            diffs.append(f"offer {o['offer_key']}: stored {live.get(o['offer_key'])} != bulk {want}")
            break
    return len(expected & stored), len(expected), statistics.median(times), diffs


# ---------------------------------------------------------------------------------------------- queries


HISTORY_SQL = """SELECT p.offer_id, p.valid_from, p.valid_to, p.price_per_gpu_hour, o.last_seen, o.provider
FROM offer_prices p JOIN offers o ON o.id = p.offer_id
WHERE p.gpu_id = {gpu} AND p.pricing = {pricing} AND p.valid_from < {end}
  AND (p.valid_to IS NULL OR p.valid_to > {start})"""


def anchor_fetch_pg(url: str, params: dict[str, Any], repeat: int) -> tuple[float, int]:
    """Median seconds to read the rows the endpoint computes from, with psycopg and nothing else."""
    sql = HISTORY_SQL.format(gpu="%(gpu)s", pricing="%(pricing)s", end="%(end)s", start="%(start)s")
    with psycopg.connect(psycopg_dsn(url)) as conn:
        times, n = [], 0
        for _ in range(repeat + 1):  # the first read warms the cache, as the endpoint's warm-up does
            t = time.perf_counter()
            n = len(conn.execute(sql, params).fetchall())
            times.append(time.perf_counter() - t)
    return statistics.median(times[1:]), n


def anchor_fetch_sqlite(path: str, params: dict[str, Any], repeat: int) -> tuple[float, int]:
    sql = HISTORY_SQL.format(gpu=":gpu", pricing=":pricing", end=":end", start=":start")
    # The app stores UTC on SQLite as naive ISO text (tracker.storage.tables.UTCDateTime).
    naive = {k: v.replace(tzinfo=None).isoformat(sep=" ") if isinstance(v, datetime) else v for k, v in params.items()}
    conn = sqlite3.connect(path)
    times, n = [], 0
    for _ in range(repeat + 1):
        t = time.perf_counter()
        n = len(conn.execute(sql, naive).fetchall())
        times.append(time.perf_counter() - t)
    conn.close()
    return statistics.median(times[1:]), n


def time_endpoint(client: Any, params: dict[str, str], repeat: int) -> tuple[float, float, int]:
    """(median s, max s, buckets) of GET /v1/market/history, after one warm-up call."""
    times, buckets = [], 0
    for i in range(repeat + 1):
        t = time.perf_counter()
        response = client.get("/v1/market/history", params=params)
        elapsed = time.perf_counter() - t
        assert response.status_code == 200, response.text[:300]
        buckets = len(response.json()["buckets"])
        if i:
            times.append(elapsed)
    return statistics.median(times), max(times), buckets


def _iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def run(
    report: Report, backend: str, engine: Engine, year: Year, *, repeat: int, load_s: float, sqlite_path: str = ""
) -> None:
    url = engine.url.render_as_string(hide_password=False)
    n_rows = len(year.rows)
    snapshot_rows = len(year.plan.base) * year.hours
    report.add(
        Figure(
            name=f"{backend} history rows, {len(year.plan.base):,} offers x {year.hours:,} hourly scrapes",
            value=n_rows,
            unit="rows",
            anchor=snapshot_rows,
            anchor_label="snapshot-per-scrape",
            anchor_unit="rows",
            ratio=snapshot_rows / n_rows,
            ratio_label="x fewer",
            target=">= 20x fewer",
            ok=snapshot_rows / n_rows >= 20,
            note=f"bulk-loaded in {load_s:.1f} s",
        )
    )
    if backend == "postgres":
        _sizes_pg(report, url, n_rows, snapshot_rows)
    else:
        _sizes_sqlite(report, sqlite_path, n_rows, snapshot_rows)

    settings = Settings(database_url=url)
    with warnings.catch_warnings():
        # Starlette warns about its own httpx dependency on import; it says nothing about what we measure.
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    client = TestClient(create_app(settings, engine))
    now = utcnow()
    for interval, days, target in (("1d", 365, 0.200), ("1h", 30, None)):
        start, end = now - timedelta(days=days), now
        params = {"gpu": CARD, "pricing": PRICING, "interval": interval, "start": _iso(start), "end": _iso(end)}
        median_s, max_s, buckets = time_endpoint(client, params, repeat)
        compute_s = _time_view(engine, settings, now, interval, start, end, repeat)
        # The endpoint's lower bound of the range: history() widens start down to its bucket origin.
        origin = start.replace(hour=0, minute=0, second=0, microsecond=0)
        sql_params = {"gpu": CARD, "pricing": PRICING, "start": origin, "end": end}
        if backend == "postgres":
            anchor_s, n_fetched = anchor_fetch_pg(url, sql_params, repeat)
        else:
            anchor_s, n_fetched = anchor_fetch_sqlite(sqlite_path, sql_params, repeat)
        endpoint_note = (
            f"{buckets} buckets from {n_fetched:,} price rows; max {max_s * 1000:.0f} ms of {repeat}; "
            f"tracker.market.service.market_history alone {compute_s * 1000:.0f} ms"
        )
        report.add(
            _against_fetch(
                f"{backend} GET /v1/market/history {CARD} {interval} x {days} d",
                median_s,
                anchor_s,
                target,
                endpoint_note,
            )
        )
        # The endpoint's answer is kept (the repeated calls above are mostly memo hits); what a first
        # request after a start or an ingest waits for is the computation itself, read from the database.
        name = f"{backend} history {CARD} {interval} x {days} d, cold (market_history, no memo)"
        report.add(_against_fetch(name, compute_s, anchor_s, target, f"median of {repeat}; {n_fetched:,} price rows"))
    client.close()


def _against_fetch(name: str, seconds: float, anchor_s: float, target: float | None, note: str) -> Figure:
    """A history timing beside reading its rows with the driver alone."""
    return Figure(
        name=name,
        value=seconds * 1000,
        unit="ms",
        anchor=anchor_s * 1000,
        anchor_label="fetch rows",
        anchor_unit="ms",
        ratio=anchor_s / seconds,
        ratio_label="x fetch speed",
        target=f"<= {target * 1000:.0f} ms" if target else "info",
        ok=None if target is None else seconds <= target,
        note=note,
    )


def _time_view(
    engine: Engine, settings: Settings, now: datetime, interval: str, start: datetime, end: datetime, repeat: int
) -> float:
    """Median seconds of the computation behind the endpoint, without HTTP, validation or JSON."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        with session_scope(engine) as session:
            market_history(
                session, settings, now, gpu_ids=[CARD], pricing=PRICING, interval=interval, start=start, end=end
            )
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _sizes_pg(report: Report, url: str, n_rows: int, snapshot_rows: int) -> None:
    with psycopg.connect(psycopg_dsn(url), autocommit=True) as conn:
        # Partitioned (migration 0018): the parent holds nothing itself, its partitions hold the rows.
        prices_bytes = conn.execute(
            "SELECT coalesce((SELECT sum(pg_total_relation_size(relid))::bigint FROM pg_partition_tree('offer_prices')"
            " WHERE isleaf), pg_total_relation_size('offer_prices'))"
        ).fetchone()[0]  # type: ignore[index]
        db_bytes = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
        # Bytes per row of the alternative design, measured here: a table of one row per offer per scrape
        # with the same columns (minus valid_to, plus the scrape instant) and the same two indexes.
        sample = 200_000
        conn.execute(
            """CREATE TABLE bench_snapshot_sample AS
               SELECT (g %% 2000) + 1 AS offer_id, 'H100-SXM-80GB'::varchar(64) AS gpu_id,
                      'on_demand'::varchar(16) AS pricing,
                      now() - make_interval(hours => g / 2000) AS observed_at,
                      (1.5 + (g %% 97) / 100.0)::numeric(14,6) AS price_per_hour,
                      (1.5 + (g %% 89) / 100.0)::numeric(14,6) AS price_per_gpu_hour,
                      (g / 2000)::bigint AS run_id
               FROM generate_series(0, %s - 1) AS g""",
            (sample,),
        )
        conn.execute("ALTER TABLE bench_snapshot_sample ADD COLUMN id bigserial PRIMARY KEY")
        conn.execute("CREATE INDEX ON bench_snapshot_sample (offer_id, observed_at)")
        conn.execute("CREATE INDEX ON bench_snapshot_sample (gpu_id, observed_at)")
        conn.execute("VACUUM ANALYZE bench_snapshot_sample")
        sample_bytes = conn.execute("SELECT pg_total_relation_size('bench_snapshot_sample')").fetchone()[0]  # type: ignore[index]
        conn.execute("DROP TABLE bench_snapshot_sample")
    projected = sample_bytes / sample * snapshot_rows
    report.add(
        Figure(
            name="postgres history size, offer_prices + indexes",
            value=prices_bytes / 2**20,
            unit="MiB",
            anchor=projected / 2**20,
            anchor_label="snapshot-per-scrape",
            anchor_unit="MiB",
            ratio=projected / prices_bytes,
            ratio_label="x smaller",
            target="info",
            ok=None,
            note=f"{prices_bytes / n_rows:.0f} B/row vs {sample_bytes / sample:.0f} B/row measured on a "
            f"{sample:,}-row sample; whole database {db_bytes / 2**20:.0f} MiB",
        )
    )


def _sizes_sqlite(report: Report, path: str, n_rows: int, snapshot_rows: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    try:
        prices_bytes = conn.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name IN "
            "('offer_prices', 'ix_offer_prices_history', 'ix_offer_prices_offer_from')"
        ).fetchone()[0]
    except sqlite3.OperationalError:  # dbstat is a compile-time option
        prices_bytes = None
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    db_bytes = conn.execute("PRAGMA page_count").fetchone()[0] * page
    conn.close()
    value = prices_bytes if prices_bytes else db_bytes
    per_row = value / n_rows
    report.add(
        Figure(
            name="sqlite history size, " + ("offer_prices + indexes" if prices_bytes else "whole file"),
            value=value / 2**20,
            unit="MiB",
            anchor=per_row * snapshot_rows / 2**20,
            anchor_label="snapshot-per-scrape (same B/row)",
            anchor_unit="MiB",
            ratio=snapshot_rows / n_rows,
            ratio_label="x smaller",
            target="info",
            ok=None,
            note=f"whole file {db_bytes / 2**20:.0f} MiB",
        )
    )


def verify_figure(
    report: Report, matched: int, expected: int, per_ingest_s: float, diffs: list[str], hours: int, n_offers: int
) -> None:
    report.add(
        Figure(
            name=f"postgres history bulk rows == real ingest replay of first {hours} h",
            value=matched,
            unit="rows match",
            anchor=expected,
            anchor_label="expected",
            anchor_unit="rows",
            ratio=matched / expected if expected else 0.0,
            ratio_label="",
            target="== 1 and no diff",
            ok=matched == expected and not diffs,
            note="; ".join(diffs) if diffs else f"hourly ingest of {n_offers:,} offers: {per_ingest_s * 1000:.0f} ms",
        )
    )
