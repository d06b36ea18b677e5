"""What every benchmark section shares: figures and their report line, databases, timing, the machine.

A figure is a measurement next to an anchor measured in the same run on the same machine, and their
ratio: the machines are shared and noisy, so absolute numbers drift from run to run while the ratio
mostly does not. Targets are stated on the ratio wherever the issue states them that way.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text

from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine

PG_ADMIN_URL = os.environ.get(
    "BENCH_PG_ADMIN_URL",
    os.environ.get("TRACKER_TEST_PG_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"),
)
RUN_ID = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    anchor: float | None  # None: the figure has no meaningful anchor and its ratio is against a target
    anchor_label: str  # what the anchor is, e.g. "COPY"
    anchor_unit: str
    ratio: float
    ratio_label: str  # how to read the ratio, e.g. "x COPY rate", "x fewer"
    target: str  # e.g. ">= 0.25", "<= 200 ms", "info"
    ok: bool | None  # None: information only (the issue states no target)
    note: str = ""

    @property
    def verdict(self) -> str:
        return "INFO" if self.ok is None else ("PASS" if self.ok else "FAIL")

    def cells(self) -> list[str]:
        anchor = "—" if self.anchor is None else f"{self.anchor_label} {fmt(self.anchor)} {self.anchor_unit}".strip()
        return [
            self.name,
            f"{fmt(self.value)} {self.unit}",
            anchor,
            f"{fmt(self.ratio)}{self.ratio_label}",
            self.target,
            self.verdict,
        ]


def fmt(x: float) -> str:
    if x != x:  # NaN
        return "n/a"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 0.01:
        return f"{x:.3g}" if abs(x) < 1 else f"{x:.2f}"
    return f"{x:.2g}"


@dataclass
class Report:
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, fig: Figure) -> Figure:
        self.figures.append(fig)
        # One line per figure as soon as it is known, so a long run shows progress and a killed run keeps
        # what it measured.
        print(" | ".join(fig.cells()) + (f"   ({fig.note})" if fig.note else ""), flush=True)
        return fig

    def note(self, message: str) -> None:
        self.notes.append(message)
        print(f"# {message}", flush=True)

    def markdown(self) -> str:
        head = ["figure", "measurement", "anchor", "ratio", "target", "result"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(f.cells()) + " |" for f in self.figures]
        return "\n".join(lines)


def section(title: str) -> None:
    print(f"\n== {title}", flush=True)


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of `repeat` calls: robust to one call landing on a noisy neighbour's burst."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


class StatementTimer:
    """Wall time spent in SQL per statement kind (verb + table) on one engine: where a batch's time went.

    Listens to the engine's cursor events, so it adds two clock reads per statement and nothing else.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.acc: dict[str, list[float]] = {}
        self._start: dict[int, float] = {}
        event.listen(engine, "before_cursor_execute", self._before)
        event.listen(engine, "after_cursor_execute", self._after)

    def _before(self, conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        self._start[id(conn)] = time.perf_counter()

    def _after(self, conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        elapsed = time.perf_counter() - self._start.pop(id(conn), time.perf_counter())
        m = re.match(r"\s*(INSERT INTO|UPDATE|DELETE FROM)\s+(\w+)", statement) or re.search(
            r"^\s*(SELECT)\b.*?\bFROM\s+(\w+)", statement, re.S
        )
        kind = f"{m.group(1)} {m.group(2)}" if m else statement.split(None, 1)[0]
        slot = self.acc.setdefault(kind, [0.0, 0.0])
        slot[0] += 1
        slot[1] += elapsed

    def reset(self) -> None:
        self.acc.clear()

    def summary(self, per: int = 1, top: int = 2) -> str:
        """e.g. "310 ms in 27 statements, most in 23x UPDATE offers 250 ms" (averaged over `per` batches)."""
        total = sum(t for _, t in self.acc.values()) / per
        count = sum(n for n, _ in self.acc.values()) / per
        worst = sorted(self.acc.items(), key=lambda kv: -kv[1][1])[:top]
        parts = ", ".join(f"{n / per:.0f}x {k} {t / per * 1000:.0f} ms" for k, (n, t) in worst)
        return f"{total * 1000:.0f} ms in {count:.0f} statements ({parts})"

    def close(self) -> None:
        event.remove(self.engine, "before_cursor_execute", self._before)
        event.remove(self.engine, "after_cursor_execute", self._after)


# ---------------------------------------------------------------------------------------------- databases


def admin_engine() -> Engine:
    return create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")


@contextmanager
def pg_database(suffix: str) -> Iterator[str]:
    """A fresh Postgres database bench_<pid>_<suffix>, dropped afterwards whatever happens."""
    name = f"bench_{RUN_ID}_{suffix}"
    admin = admin_engine()
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def migrated(url: str) -> Engine:
    engine = make_engine(url)
    migrate.upgrade(engine)
    return engine


def psycopg_dsn(url: str) -> str:
    """A libpq DSN for psycopg from a SQLAlchemy URL, query options included (the engine's URL carries
    libpq options such as the statement timeout; libpq URIs would read their `+` literally)."""
    from psycopg.conninfo import make_conninfo
    from sqlalchemy.engine import make_url

    u = make_url(url)
    parts = {"host": u.host, "port": u.port, "user": u.username, "password": u.password, "dbname": u.database}
    return make_conninfo(**{k: str(v) for k, v in (parts | dict(u.query)).items() if v is not None})


# ---------------------------------------------------------------------------------------------- machine


def machine() -> dict[str, str]:
    info: dict[str, str] = {"python": sys.version.split()[0], "platform": platform.platform()}
    info["nproc"] = str(os.cpu_count())
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
        info["cpu"] = model.group(1).strip() if model else platform.processor()
        mem = re.search(r"^MemTotal:\s*(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
        info["ram"] = f"{int(mem.group(1)) / 2**20:.1f} GiB" if mem else "?"
    except OSError:
        info["cpu"], info["ram"] = platform.processor(), "?"
    try:
        with admin_engine().connect() as conn:
            info["postgres"] = str(conn.execute(text("SHOW server_version")).scalar())
    except Exception as exc:  # the report must still say why Postgres figures are missing
        info["postgres"] = f"unreachable ({exc.__class__.__name__})"
    import sqlite3

    info["sqlite"] = sqlite3.sqlite_version
    return info


# Runs the command as its grandchild and reports that grandchild's own peak RSS. Linux carries a
# process's high-water RSS across fork and exec, so a child forked straight from this (large) bench
# process would report at least the bench's own peak; forked from this small launcher it starts clean.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\n@@maxrss_kib {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def peak_rss_of(argv: list[str], env: dict[str, str] | None = None, timeout: float = 300) -> tuple[int, int, str]:
    """Run a command; return (exit status, its own peak RSS in bytes, its stdout)."""
    launcher = [sys.executable, "-I", "-S", "-c", _LAUNCHER, *argv]
    proc = subprocess.run(launcher, env=env, capture_output=True, text=True, timeout=timeout)
    found = re.findall(r"@@maxrss_kib (\d+)", proc.stderr)
    if not found:
        raise RuntimeError(f"no peak RSS reported for {argv[:3]}: {proc.stderr[-500:]}")
    return proc.returncode, int(found[-1]) * 1024, proc.stdout


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM (peak) in bytes of a live process, from /proc."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def cpu_seconds(pid: int) -> float:
    """User+system CPU time a live process has used (for "was the server or the client saturated")."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
