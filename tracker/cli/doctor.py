"""`gpu-tracker doctor`: has any provider's API drifted from what its parser expects?"""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from providers.cassette import CassetteError
from providers.registry import UnknownProvider
from tracker.cli.context import runtime
from tracker.cli.output import console, emit_json, fail
from tracker.pipeline.drift import ProviderDrift, run_doctor

STATUS_STYLE = {"ok": "green", "drifted": "red", "failed": "red", "skipped": "dim"}

commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("doctor")
def doctor(
    ctx: typer.Context,
    providers: list[str] = typer.Argument(None, help="Providers to check (default: all)."),
    replay: Path | None = typer.Option(
        None, "--replay", help="Check this cassette instead of the live API (one provider)."
    ),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Fetch each provider and compare with its bundled cassette and the last good run: fields the parser
    needs that are gone, new fields, unresolved GPU names, price moves beyond ×1.5, fetch errors.
    Exits 1 if any provider drifted."""
    rt = runtime(ctx)
    try:
        reports = asyncio.run(run_doctor(providers or [], settings=rt.settings, engine=rt.engine, replay=replay))
    except (UnknownProvider, CassetteError, ValueError) as exc:
        fail(str(exc))
    drifted = [r for r in reports if r.drifted]
    failed = [r for r in reports if r.status == "failed" and not r.drifted]
    if json_out:
        emit_json({"drifted": bool(drifted), "failed": bool(failed), "providers": [r.as_dict() for r in reports]})
    else:
        for report in reports:
            _print(report)
        console.print(_summary(reports, len(drifted), len(failed)), highlight=False)
    if drifted or failed:  # a provider that could not be checked is not a pass either
        raise typer.Exit(1)


def _summary(reports: list[ProviderDrift], drifted: int, failed: int) -> str:
    checked = sum(1 for r in reports if r.status != "skipped")
    line = f"{drifted} of {checked} providers checked drifted"
    if failed:
        line += f"; {failed} could not be fetched (offline? see each fetch error), so were not compared"
    if skipped := len(reports) - checked:
        line += f"; {skipped} skipped (no credentials)"
    return line


def _print(report: ProviderDrift) -> None:
    style = STATUS_STYLE.get(report.status, "")
    where = "" if report.source == "live" else f" ({report.source})"
    detail = f": {report.skipped}" if report.skipped else f", {report.offers} offers"
    console.print(f"[bold]{report.provider}[/]{where}: [{style}]{report.status}[/]{detail}", highlight=False)
    # Findings hold key paths like `offers[].id`: printed without markup, or rich would read them as tags.
    for line in report.problems():
        console.print(f"  ✗ {line}", markup=False, highlight=False)
    for line in report.notes():
        console.print(f"  · {line}", markup=False, highlight=False, style="dim")
