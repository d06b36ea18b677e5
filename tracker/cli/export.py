"""`gpu-tracker export`: write the change-only history as an open dataset (tracker.history.export)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer

from tracker.cli.context import runtime
from tracker.cli.output import console, emit_json, fail
from tracker.clock import utcnow
from tracker.history.dataset import FORMATS, DatasetError
from tracker.history.export import write_export
from tracker.storage.engine import session_scope

commands = typer.Typer(add_completion=False)


def parse_instant(text: str | None, option: str) -> datetime | None:
    """A day (YYYY-MM-DD, midnight UTC) or an ISO instant (UTC when no offset is given)."""
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        fail(f"{option} {text!r} is not a date (YYYY-MM-DD) or ISO-8601 instant")
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


@commands.command("export")
def export(
    ctx: typer.Context,
    out: Path = typer.Option(..., "--out", help="Directory to write (created if missing)."),
    since: str | None = typer.Option(None, "--since", help="Only history valid at or after this day/instant."),
    until: str | None = typer.Option(None, "--until", help="Only history before this day/instant."),
    fmt: str = typer.Option("csv", "--format", help="csv, jsonl or parquet (parquet needs pyarrow)."),
    json_out: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
) -> None:
    """Export price and availability history, one file per UTC day, with the offers and a manifest."""
    if fmt not in FORMATS:
        fail(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    lo, hi = parse_instant(since, "--since"), parse_instant(until, "--until")
    if lo is not None and hi is not None and lo >= hi:
        fail("--since must be before --until")
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: exists and is not a directory")
    rt = runtime(ctx)
    try:
        with session_scope(rt.engine) as session:
            manifest = write_export(
                session, out, fmt=fmt, generated_at=utcnow(), since=lo, until=hi, settings=rt.settings
            )
    except DatasetError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror}")
    if json_out:
        emit_json(manifest)
        return
    rows = {
        t: sum(f["rows"] for f in manifest["files"] if f["table"] == t)
        for t in ("prices", "availability", "runs", "offers")
    }
    if manifest["left_out"]:
        names = ", ".join(s["provider"] for s in manifest["left_out"])
        console.print(f"[yellow]left out[/] (their terms under TRACKER_REPUBLISH={manifest['republish']}): {names}")
    if not manifest["for_publication"]:
        console.print("[yellow]private export[/] (TRACKER_REPUBLISH=private): not for publication.")
    console.print(
        f"exported {rows['prices']} price rows, {rows['availability']} availability rows, {rows['runs']} runs and "
        f"{rows['offers']} offers in {len(manifest['files'])} files to {out}"
    )
