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
    if json_out:
        emit_json({"drifted": bool(drifted), "providers": [r.as_dict() for r in reports]})
    else:
        for report in reports:
            _print(report)
        checked = sum(1 for r in reports if r.status != "skipped")
        console.print(f"{len(drifted)} of {checked} providers checked drifted", highlight=False)
    if drifted:
        raise typer.Exit(1)


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
