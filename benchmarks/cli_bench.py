"""§6 CLI start-up: `gpu-tracker cheapest … --json` on the embedded default, against the floors.

The command is run as a user runs it (the console script, a fresh process each time) on an embedded
SQLite database holding the reference sheet, and timed as wall time over `repeat` runs (median).
Anchors, measured in the same run the same way: `python -c pass` (the interpreter's own start) and a
process that only imports what the command truly needs (Typer, SQLAlchemy's ORM, NumPy, pydantic-
settings). The target is the issue's: at most 0.4 s median.

`on_database` runs the same command on the database a section has just ingested (issue #29: 200,000 offers at
`--scale 10`), as a table at 80 columns (what a user reads: one row per listing) and as `--json`: the first
call after the ingest (it loads the offers and keeps them in the data directory's cache) and the median of the
calls after it. Target: at most 1 s.

Bytecode: both run with the interpreter writing and reading `.pyc` files as an installed tool does; a
PYTHONDONTWRITEBYTECODE inherited from the shell would recompile every module of ours on every call.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import Figure, Report

TABLE_COMMAND = ["cheapest", "--model", "llama-3.1-8b", "--method", "qlora", "--tokens", "22.5M"]
COMMAND = [*TABLE_COMMAND, "--json"]
NEEDED_IMPORTS = "import typer, rich.console, sqlalchemy.orm, numpy, pydantic_settings"
TARGET_S = 0.4
SCALE_TARGET_S = 1.0  # issue #29: `cheapest` on a database of 200,000 offers


def _cli() -> list[str]:
    script = Path(sys.executable).parent / "gpu-tracker"
    return [str(script)] if script.exists() else [sys.executable, "-c", "from tracker.cli import main; main()"]


def _median_wall(args: list[str], env: dict[str, str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _env(**extra: str) -> dict[str, str]:
    env = os.environ | extra
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run(report: Report, work_dir: Path, repeat: int = 15) -> None:
    data = work_dir / "cli-bench"
    data.mkdir(exist_ok=True)
    env = _env(TRACKER_DATA_DIR=str(data))
    env.pop("TRACKER_DATABASE_URL", None)  # the embedded default
    subprocess.run([*_cli(), "scrape", "reference"], env=env, check=True, stdout=subprocess.DEVNULL)
    _median_wall([*_cli(), *COMMAND], env, 2)  # warm the OS file cache and the .pyc files
    bare = _median_wall([sys.executable, "-c", "pass"], env, repeat)
    floor = _median_wall([sys.executable, "-c", NEEDED_IMPORTS], env, repeat)
    cheapest = _median_wall([*_cli(), *COMMAND], env, repeat)
    note = f"median of {repeat}; `python -c pass` {bare * 1000:.0f} ms; needed imports: {NEEDED_IMPORTS}"
    report.add(_against_imports("cli `cheapest --json` wall (embedded SQLite)", cheapest, floor, TARGET_S, note))


def _against_imports(name: str, seconds: float, floor: float, target_s: float, note: str) -> Figure:
    """A wall time beside the process that only imports what the command needs."""
    return Figure(
        name=name,
        value=seconds * 1000,
        unit="ms",
        anchor=floor * 1000,
        anchor_label="needed imports",
        anchor_unit="ms",
        ratio=seconds / floor,
        ratio_label="x needed imports",
        target=f"<= {target_s * 1000:.0f} ms",
        ok=seconds <= target_s,
        note=note,
    )


def on_database(report: Report, backend: str, database_url: str, work_dir: Path, repeat: int = 5) -> None:
    """`cheapest` on the database a section has just ingested: first call and later calls, table and JSON."""
    data = work_dir / f"cli-{backend}"
    data.mkdir(exist_ok=True)
    env = _env(TRACKER_DATA_DIR=str(data), TRACKER_DATABASE_URL=database_url, COLUMNS="80")
    floor = _median_wall([sys.executable, "-c", NEEDED_IMPORTS], env, repeat)
    for label, command in (("table", TABLE_COMMAND), ("--json", COMMAND)):
        args = [*_cli(), *command]
        for cached in data.glob("cache/*"):
            cached.unlink()  # the call after an ingest finds no kept table
        first = _median_wall(args, env, 1)
        later = _median_wall(args, env, repeat)
        note = f"median of {repeat} after the first; the first (loads and keeps the table) {first * 1000:.0f} ms"
        name = f"{backend} cli `cheapest` ({label}) on the ingested database"
        report.add(_against_imports(name, later, floor, SCALE_TARGET_S, note))
