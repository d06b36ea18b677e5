"""`make bench`: every figure of issue #8 in one run, Postgres first (the target), then SQLite.

Prints one line per figure — name | measurement | anchor | ratio | target | PASS/FAIL/INFO — as soon as
it is measured, then the whole table. Each run creates and drops its own Postgres databases
(bench_<pid>_<random>_<part>) and its own SQLite files in a temporary directory.

    python -m benchmarks.run                 # the full run (about 6-8 minutes on 2 cores)
    python -m benchmarks.run --quick         # small sizes, to check the harness itself (about 2 minutes)
    python -m benchmarks.run --scale 10      # issue #29: 200,000 offers per scrape, 20,000 x a year of history
    python -m benchmarks.run --scale 10 --only rank,plan,api   # some sections only
    python -m benchmarks.run --markdown out.md

The section functions (`<section>_bench.run`, `Sizes`, `QUICK`) keep their names so other harnesses can
drive them; `--scale` only multiplies the sizes they are given.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
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
from tracker.clock import utcnow
from tracker.config import Settings
from tracker.storage.engine import make_engine

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

    def scaled(self, factor: int) -> Sizes:
        """Every data size `factor` times larger (issue #29's 10x: 200,000 offers per scrape, 20,000 offers
        x a year of hourly history); repetitions and durations unchanged."""
        return replace(
            self,
            offers=self.offers * factor,
            history_offers=self.history_offers * factor,
            import_offers=self.import_offers * factor,
        )


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


SECTIONS = ("ingest", "rank", "plan", "api", "history", "index", "import", "memory", "cli")


def _ingester(url: str, work: ingest_bench.Workload) -> Callable[[int], object]:
    """`ingest(k)`: the k-th batch of a sequence that changes prices every time (for §3's after-ingest)."""
    engine = make_engine(url)
    settings = Settings(database_url=url)
    batches = [b for changed in work.changed for b in (changed, work.first)]
    return lambda k: ingest_bench.ingest_batch(engine, settings, batches[k % len(batches)], utcnow())


def run_postgres(
    report: Report,
    sizes: Sizes,
    work: ingest_bench.Workload,
    year: history_bench.Year | None,
    tmp: Path,
    only: Collection[str] = SECTIONS,
) -> None:
    with pg_database("main") as url:
        engine = migrated(url)
        section(f"§1 ingest, postgres ({sizes.offers:,} offers)")
        ingest_bench.run(report, "postgres", engine, work, sizes.repeat)  # always: the sections below read it
        if "cli" in only:
            section("§6 CLI on the ingested database, postgres")
            cli_bench.on_database(report, "postgres", url, tmp)
        if "rank" in only:
            section("§4 rank compute")
            rank_bench.run(report, "postgres", engine, sizes.rank_repeat)
        if "plan" in only:
            section("§7 fleet plan")
            plan_bench.run(report, "postgres", engine, sizes.plan_repeat)
        engine.dispose()
        if "api" in only:
            section("§3 API under load, postgres")
            api_bench.run(report, "postgres", url, str(tmp), duration=sizes.api_seconds)
            section("§3 first answers after an ingest, postgres")
            api_bench.after_ingest(report, "postgres", url, str(tmp), _ingester(url, work))

    if "history" in only and year is not None:
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

    if "index" in only:
        section("§9 price index, postgres")
        with pg_database("index") as url:
            index_bench.run(report, "postgres", url, tmp, days=sizes.import_days)

    if "import" in only:
        section("§8 history import, postgres")
        with pg_database("import") as url, pg_database("import_anchor") as anchor:
            import_bench.run(report, "postgres", url, tmp, sizes.import_offers, sizes.import_days, anchor)

    if "memory" in only:
        section("§5 worker memory, postgres")
        with pg_database("memory") as url:
            migrated(url).dispose()
            memory_bench.run(report, "postgres", url, tmp, sizes.offers)


def run_sqlite(
    report: Report,
    sizes: Sizes,
    work: ingest_bench.Workload,
    year: history_bench.Year | None,
    tmp: Path,
    only: Collection[str] = SECTIONS,
) -> None:
    path = tmp / "bench.db"
    url = f"sqlite:///{path}"
    engine = migrated(url)
    section(f"§1 ingest, sqlite ({sizes.offers:,} offers)")
    ingest_bench.run(report, "sqlite", engine, work, sizes.repeat, sqlite_path=str(tmp / "anchor.db"))
    if "cli" in only:
        section("§6 CLI on the ingested database, sqlite")
        cli_bench.on_database(report, "sqlite", url, tmp)
    if "plan" in only:
        section("§7 fleet plan, sqlite")
        plan_bench.run(report, "sqlite", engine, sizes.plan_repeat)
    engine.dispose()
    if "api" in only:
        section("§3 API under load, sqlite")
        api_bench.run(report, "sqlite", url, str(tmp), duration=sizes.api_seconds)
        section("§3 first answers after an ingest, sqlite")
        api_bench.after_ingest(report, "sqlite", url, str(tmp), _ingester(url, work))

    if "import" in only:
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

    if "history" in only and year is not None:
        section(f"§2 history, sqlite ({sizes.history_offers:,} offers x {sizes.history_hours:,} h)")
        hpath = tmp / "history.db"
        engine = migrated(f"sqlite:///{hpath}")
        load_s = history_bench.load_sqlite(engine, year)
        history_bench.run(
            report, "sqlite", engine, year, repeat=sizes.query_repeat, load_s=load_s, sqlite_path=str(hpath)
        )
        engine.dispose()

    if "index" in only:
        section("§9 price index, sqlite")
        index_bench.run(report, "sqlite", f"sqlite:///{tmp / 'index.db'}", tmp, days=sizes.import_days)


def main(argv: list[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes: checks the harness, not the targets")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--markdown", type=Path, help="also write the machine and the table here")
    parser.add_argument("--scale", type=int, default=1, help="multiply every data size (10: issue #29's 10x)")
    parser.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated sections (ingest always runs): {SECTIONS}"
    )
    args = parser.parse_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    if unknown := only - set(SECTIONS):
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    if args.scale < 1:
        parser.error("--scale must be at least 1")
    sizes = (QUICK if args.quick else Sizes()).scaled(args.scale)
    # Starlette's TestClient warns about its own httpx dependency; it says nothing about what we measure.
    warnings.filterwarnings("ignore", message=".*starlette.testclient.*")

    started = time.perf_counter()
    report = Report()
    info = machine()
    print("machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), flush=True)
    print("figure | measurement | anchor | ratio | target | result", flush=True)
    section("generating data")
    work = ingest_bench.workload(sizes.offers, sizes.repeat)
    year = (
        history_bench.build_year(sizes.history_offers, sizes.history_hours, sizes.history_change)
        if "history" in only
        else None
    )
    report.note(
        f"scale {args.scale}x, sections {','.join(s for s in SECTIONS if s in only)}: {work.n_offers:,} offers "
        f"from {len(work.valid):,} valid; history {len(year.rows) if year else 0:,} price rows "
        f"in {time.perf_counter() - started:.0f} s"
    )
    with tempfile.TemporaryDirectory(prefix="gpu-bench-") as tmp:
        if not args.no_postgres and postgres_ok(report):
            run_postgres(report, sizes, work, year, Path(tmp), only)
        if not args.no_sqlite:
            run_sqlite(report, sizes, work, year, Path(tmp), only)
        if "cli" in only:
            section("§6 CLI start-up (embedded SQLite)")
            cli_bench.run(report, Path(tmp), repeat=5 if args.quick else 15)

    elapsed = time.perf_counter() - started
    full = only == set(SECTIONS) and args.scale == 1
    report.add(
        Figure(
            name="make bench wall time"
            + (" (--quick)" if args.quick else "")
            + ("" if args.scale == 1 else f" (--scale {args.scale})")
            + ("" if only == set(SECTIONS) else f" (--only {','.join(s for s in SECTIONS if s in only)})"),
            value=elapsed / 60,
            unit="min",
            anchor=BUDGET_S / 60,
            anchor_label="budget",
            anchor_unit="min",
            ratio=elapsed / BUDGET_S,
            ratio_label="x budget",
            target="< 1x" if full else "info",
            ok=elapsed < BUDGET_S if full else None,
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
