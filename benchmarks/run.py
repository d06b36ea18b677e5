"""`make bench`: every figure of issue #8 in one run, Postgres first (the target), then SQLite.

Prints one line per figure — name | measurement | anchor | ratio | target | PASS/FAIL/INFO — as soon as
it is measured, then the whole table. Each run creates and drops its own Postgres databases
(bench_<pid>_<random>_<part>) and its own SQLite files in a temporary directory.

    python -m benchmarks.run                 # the full run (about 6-8 minutes on 2 cores)
    python -m benchmarks.run --quick         # small sizes, to check the harness itself (about 2 minutes)
    python -m benchmarks.run --markdown out.md
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text

from benchmarks import (
    api_bench,
    cli_bench,
    history_bench,
    import_bench,
    index_bench,
    ingest_bench,
    memory_bench,
    plan_bench,
    rank_bench,
)
from benchmarks.common import Figure, Report, admin_engine, machine, migrated, pg_database, section

BUDGET_S = 15 * 60  # the bound on `make bench` on a 2-core machine


@dataclass(frozen=True)
class Sizes:
    offers: int = 20_000  # §1, §3, §4: the marketplace snapshot
    repeat: int = 3  # ingest batches timed per case (median)
    history_offers: int = 2_000  # §2
    history_hours: int = 24 * 365
    history_change: float = 0.02
    verify_hours: int = 24  # §2: hours replayed through the real ingest to check the bulk load
    query_repeat: int = 5  # §2: history endpoint calls timed (median)
    api_seconds: float = 8.0  # §3: measured window per endpoint (after a 1 s warm-up)
    rank_repeat: int = 20  # §4
    plan_repeat: int = 10  # §7
    import_offers: int = 20_000  # §8: a year of these offers' daily changes, imported from an export
    import_days: int = 365


QUICK = Sizes(
    offers=2_000,
    repeat=2,
    history_hours=24 * 30,
    verify_hours=6,
    query_repeat=3,
    api_seconds=2.0,
    rank_repeat=5,
    plan_repeat=3,
    import_offers=2_000,
    import_days=60,
)


def postgres_ok(report: Report) -> bool:
    try:
        with admin_engine().connect() as conn:
            conn.execute(text("SELECT 1"))
        return True
    except Exception as exc:  # the SQLite half still runs and says why Postgres figures are missing
        report.note(f"Postgres unreachable, its figures are skipped: {exc}")
        return False


def run_postgres(
    report: Report, sizes: Sizes, work: ingest_bench.Workload, year: history_bench.Year, tmp: Path
) -> None:
    with pg_database("main") as url:
        engine = migrated(url)
        section(f"§1 ingest, postgres ({sizes.offers:,} offers)")
        ingest_bench.run(report, "postgres", engine, work, sizes.repeat)
        section("§4 rank compute")
        rank_bench.run(report, "postgres", engine, sizes.rank_repeat)
        section("§7 fleet plan")
        plan_bench.run(report, "postgres", engine, sizes.plan_repeat)
        engine.dispose()
        section("§3 API under load, postgres")
        api_bench.run(report, "postgres", url, str(tmp), duration=sizes.api_seconds)

    section(f"§2 history, postgres ({sizes.history_offers:,} offers x {sizes.history_hours:,} h)")
    with pg_database("verify") as url:
        engine = migrated(url)
        matched, expected, per_ingest, diffs = history_bench.verify_against_ingest(engine, year, sizes.verify_hours)
        history_bench.verify_figure(
            report, matched, expected, per_ingest, diffs, sizes.verify_hours, sizes.history_offers
        )
        engine.dispose()
    with pg_database("history") as url:
        engine = migrated(url)
        load_s = history_bench.load_pg(url, year)
        history_bench.run(report, "postgres", engine, year, repeat=sizes.query_repeat, load_s=load_s)
        engine.dispose()

    section("§9 price index, postgres")
    with pg_database("index") as url:
        index_bench.run(report, "postgres", url, tmp, days=sizes.import_days)

    section("§8 history import, postgres")
    with pg_database("import") as url, pg_database("import_anchor") as anchor:
        import_bench.run(report, "postgres", url, tmp, sizes.import_offers, sizes.import_days, anchor)

    section("§5 worker memory, postgres")
    with pg_database("memory") as url:
        migrated(url).dispose()
        memory_bench.run(report, "postgres", url, tmp, sizes.offers)


def run_sqlite(report: Report, sizes: Sizes, work: ingest_bench.Workload, year: history_bench.Year, tmp: Path) -> None:
    path = tmp / "bench.db"
    url = f"sqlite:///{path}"
    engine = migrated(url)
    section(f"§1 ingest, sqlite ({sizes.offers:,} offers)")
    ingest_bench.run(report, "sqlite", engine, work, sizes.repeat, sqlite_path=str(tmp / "anchor.db"))
    section("§7 fleet plan, sqlite")
    plan_bench.run(report, "sqlite", engine, sizes.plan_repeat)
    engine.dispose()
    section("§3 API under load, sqlite")
    api_bench.run(report, "sqlite", url, str(tmp), duration=sizes.api_seconds)

    section("§8 history import, sqlite")
    import_bench.run(
        report,
        "sqlite",
        f"sqlite:///{tmp / 'import.db'}",
        tmp,
        sizes.import_offers,
        sizes.import_days,
        str(tmp / "import_anchor.db"),
    )

    section(f"§2 history, sqlite ({sizes.history_offers:,} offers x {sizes.history_hours:,} h)")
    hpath = tmp / "history.db"
    engine = migrated(f"sqlite:///{hpath}")
    load_s = history_bench.load_sqlite(engine, year)
    history_bench.run(report, "sqlite", engine, year, repeat=sizes.query_repeat, load_s=load_s, sqlite_path=str(hpath))
    engine.dispose()

    section("§9 price index, sqlite")
    index_bench.run(report, "sqlite", f"sqlite:///{tmp / 'index.db'}", tmp, days=sizes.import_days)


def main(argv: list[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes: checks the harness, not the targets")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--markdown", type=Path, help="also write the machine and the table here")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else Sizes()
    # Starlette's TestClient warns about its own httpx dependency; it says nothing about what we measure.
    warnings.filterwarnings("ignore", message=".*starlette.testclient.*")

    started = time.perf_counter()
    report = Report()
    info = machine()
    print("machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), flush=True)
    print("figure | measurement | anchor | ratio | target | result", flush=True)
    section("generating data")
    work = ingest_bench.workload(sizes.offers, sizes.repeat)
    year = history_bench.build_year(sizes.history_offers, sizes.history_hours, sizes.history_change)
    report.note(
        f"{work.n_offers:,} offers from {len(work.valid):,} valid; history {len(year.rows):,} price rows "
        f"in {time.perf_counter() - started:.0f} s"
    )
    with tempfile.TemporaryDirectory(prefix="gpu-bench-") as tmp:
        if not args.no_postgres and postgres_ok(report):
            run_postgres(report, sizes, work, year, Path(tmp))
        if not args.no_sqlite:
            run_sqlite(report, sizes, work, year, Path(tmp))
        section("§6 CLI start-up (embedded SQLite)")
        cli_bench.run(report, Path(tmp), repeat=5 if args.quick else 15)

    elapsed = time.perf_counter() - started
    report.add(
        Figure(
            name="make bench wall time" + (" (--quick)" if args.quick else ""),
            value=elapsed / 60,
            unit="min",
            anchor=BUDGET_S / 60,
            anchor_label="budget",
            anchor_unit="min",
            ratio=elapsed / BUDGET_S,
            ratio_label="x budget",
            target="< 1x",
            ok=elapsed < BUDGET_S,
        )
    )
    print("\n" + report.markdown(), flush=True)
    counts = {v: sum(f.verdict == v for f in report.figures) for v in ("PASS", "FAIL", "INFO")}
    print(f"\n{counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['INFO']} INFO", flush=True)
    if args.markdown:
        lines = ["machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), "", report.markdown(), ""]
        args.markdown.write_text("\n".join(lines))
    return report


if __name__ == "__main__":
    main()
