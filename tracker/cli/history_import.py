"""`gpu-tracker import …`: seed or extend the history from published price histories (tracker.history.imports)."""

from __future__ import annotations

from pathlib import Path

import typer
from sqlalchemy.exc import SQLAlchemyError

from providers.registry import UnknownProvider, get_provider
from tracker.cli.context import runtime
from tracker.cli.output import console, emit_json, fail
from tracker.clock import utcnow
from tracker.history.dataset import DatasetError
from tracker.history.imports import ImportReport
from tracker.history.imports.aggregates import import_aggregates
from tracker.history.imports.aws_prices import import_aws_history
from tracker.history.imports.export_dir import import_export
from tracker.history.imports.skypilot import import_skypilot
from tracker.history.imports.snapshots import import_snapshots
from tracker.storage.engine import session_scope

import_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Import real price histories: an export, a provider's dated snapshots, a market-statistics series.",
)


def _show(report: ImportReport, json_out: bool) -> None:
    if json_out:
        emit_json(report.as_dict())
        return
    console.print(
        f"{report.kind} {report.source}: read {report.files_read} files ({report.rows_read} rows); wrote "
        f"{report.runs} runs, {report.offers_new} new offers, {report.price_rows} price rows, "
        f"{report.availability_rows} availability rows, {report.aggregate_rows} aggregate rows; "
        f"{report.skipped} already covered, {report.quarantined} quarantined"
    )
    if report.unknown_sources:
        console.print("[yellow]not read (no provider of ours):[/] " + ", ".join(sorted(report.unknown_sources)))
    if report.unknown_names:
        names = ", ".join(f"{n} ({c})" for n, c in sorted(report.unknown_names.items()))
        console.print(f"[yellow]unknown GPU names:[/] {names}")
    for note in report.notes:
        console.print(f"  {note}")


def _directory(path: Path) -> Path:
    if not path.is_dir():
        fail(f"{path}: not a directory")
    return path


def _run(ctx: typer.Context, work: object, json_out: bool) -> None:
    rt = runtime(ctx)
    try:
        with session_scope(rt.engine) as session:
            report = work(session, rt.settings)  # type: ignore[operator]
    except DatasetError as exc:
        fail(f"nothing imported: {exc}")
    except SQLAlchemyError as exc:
        fail(f"nothing imported: database error: {exc}")
    _show(report, json_out)


@import_app.command("export")
def export(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., help="An export directory (its manifest.json)."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Restore a gpu-price-tracker export: exact into an empty database, never over stored history."""
    _directory(directory)
    _run(ctx, lambda s, _settings: import_export(s, directory, now=utcnow()), json_out)


@import_app.command("snapshots")
def snapshots(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., help="Dated raw responses, file names starting with their time."),
    provider: str = typer.Option(..., "--provider", help="Whose responses they are (its parser reads them)."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Replay a provider's dated raw responses as scrapes at their times (only after its stored history)."""
    try:
        adapter = get_provider(provider)
    except UnknownProvider as exc:
        fail(f"--provider {provider!r}: unknown provider (known: {', '.join(sorted(exc.known))})")
    _directory(directory)
    _run(ctx, lambda s, settings: import_snapshots(s, directory, adapter, settings=settings, now=utcnow()), json_out)


@import_app.command("aggregates")
def aggregates(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., help="JSON-lines files of per-card market statistics."),
    source: str | None = typer.Option(None, "--source", help="The series' name (default: the directory's)."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Store an external market-statistics series, apart from offers, as a reference line for the charts."""
    _directory(directory)
    name = source or directory.resolve().name
    _run(ctx, lambda s, _settings: import_aggregates(s, directory, source=name[:64]), json_out)


@import_app.command("skypilot-catalog")
def skypilot_catalog(
    ctx: typer.Context,
    repo: Path = typer.Argument(..., help="A local clone of SkyPilot's catalog repository (its git history is read)."),
    since: str | None = typer.Option(None, "--since", help="Only commits from this day/instant on."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Replay each commit's catalogs/v*/<cloud>/vms.csv as a dated observation of that cloud."""
    from tracker.cli.export import parse_instant

    _directory(repo)
    lo = parse_instant(since, "--since")
    _run(ctx, lambda s, settings: import_skypilot(s, repo, settings=settings, now=utcnow(), since=lo), json_out)


@import_app.command("aws-price-history")
def aws_price_history(
    ctx: typer.Context,
    since: str = typer.Option(..., "--since", help="Versions effective from this day on (e.g. 2023-01 or 2023-01-01)."),
    region: list[str] = typer.Option(None, "--region", help="Only these regions (repeatable; default: the adapter's)."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Replay the AWS Price List's published EC2 versions (network: hundreds of MB per region and version)."""
    from providers.adapters.aws import REGIONS
    from tracker.cli.export import parse_instant

    lo = parse_instant(since + "-01" if len(since) == 7 else since, "--since")
    regions = tuple(region) if region else REGIONS
    if unknown := sorted(set(regions) - set(REGIONS)):
        fail(f"--region {', '.join(unknown)}: not a region the AWS adapter tracks ({', '.join(REGIONS)})")
    _run(
        ctx,
        lambda s, settings: import_aws_history(s, settings=settings, now=utcnow(), since=lo, regions=regions),
        json_out,
    )
