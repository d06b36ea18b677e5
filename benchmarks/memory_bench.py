"""§5 Memory of the worker: peak RSS of a full scrape cycle, each in its own process.

Two cycles through the real CLI: `gpu-tracker scrape --demo` (every provider's bundled cassette) and
`gpu-tracker scrape vastai --replay FILE` with the generated 20,000-offer marketplace as the cassette —
the scale the tracker is built for. Anchor: the peak RSS of a process that only imports the worker's
code (the floor every scrape pays before fetching anything). Peak RSS is the child's own ru_maxrss
(see benchmarks.common.peak_rss_of). The API's peak under load is measured in benchmarks.api_bench.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from benchmarks.common import Figure, Report, peak_rss_of
from benchmarks.data import vast_cassette, vast_payload

IMPORT_FLOOR = (
    "import tracker.cli, tracker.pipeline.scraping, tracker.ingest.batch, providers.registry;"
    " providers.registry.all_providers()"
)


def _cli() -> list[str]:
    script = Path(sys.executable).parent / "gpu-tracker"
    return [str(script)] if script.exists() else [sys.executable, "-c", "from tracker.cli import main; main()"]


def run(report: Report, backend: str, database_url: str, work_dir: Path, n_offers: int) -> None:
    env = os.environ | {"TRACKER_DATA_DIR": str(work_dir)}
    _, floor, _ = peak_rss_of([sys.executable, "-c", IMPORT_FLOOR], env=env)
    cassette = work_dir / "vastai-bench.json"
    cassette.write_text(json.dumps(vast_cassette(vast_payload(n_offers))))
    for label, args in (
        ("scrape --demo (all providers, bundled cassettes)", ["scrape", "--demo", "--json"]),
        (f"scrape vastai --replay ({n_offers:,} offers)", ["scrape", "vastai", "--replay", str(cassette), "--json"]),
    ):
        status, peak, out = peak_rss_of([*_cli(), "--database-url", database_url, *args], env=env)
        try:
            reports = json.loads(out) if status == 0 else []
            ok_runs = sum(r["status"] == "ok" for r in reports)
            note = f"exit {status}, {ok_runs}/{len(reports)} providers ok"
        except (ValueError, KeyError):
            note = f"exit {status}: {out[-300:]!r}"
        report.add(
            Figure(
                name=f"{backend} worker peak RSS, {label}",
                value=peak / 2**20,
                unit="MiB",
                anchor=floor / 2**20,
                anchor_label="import floor",
                anchor_unit="MiB",
                ratio=peak / floor,
                ratio_label="x floor",
                target="info" if status == 0 else "exit 0",
                ok=None if status == 0 else False,
                note=note,
            )
        )
