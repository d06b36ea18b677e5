"""`gpu-tracker scrape`, `providers` and `record`: run providers, inspect them, capture cassettes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from providers.cassette import CassetteError, RecordingTransport
from providers.contract import FetchContext, Provider, ProviderKind
from providers.fetching import fetch_offers
from providers.registry import UnknownProvider, all_providers, get_provider
from tracker.cli.context import runtime
from tracker.cli.output import console, emit_json, err_console, fail, real_console, show_table
from tracker.config import Settings, get_settings
from tracker.ingest.batch import IngestReport
from tracker.ops.status import provider_status
from tracker.pipeline.credentials import credentials_of
from tracker.pipeline.scraping import plan, run_scrape
from tracker.storage.ledger import RunStatus

STATUS_STYLE = {
    RunStatus.ok: "green",
    RunStatus.failed: "red",
    RunStatus.quarantined: "yellow",
    RunStatus.skipped: "dim",
}


commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("scrape")
def scrape(
    ctx: typer.Context,
    providers: list[str] = typer.Argument(None, help="Providers to run (default: all)."),
    replay: Path | None = typer.Option(None, "--replay", help="Replay this cassette instead of the network."),
    demo: bool = typer.Option(False, "--demo", help="Replay every provider's bundled cassette (offline)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Fetch and diff, but store nothing."),
    json_out: bool = typer.Option(False, "--json"),
    wide: bool = typer.Option(False, "--wide", help="Every column, past the terminal's width if need be."),
) -> None:
    """Fetch prices and ingest them. Exits 1 if any provider failed."""
    if replay and demo:
        fail("--replay and --demo are exclusive")
    try:
        jobs = plan(providers or [], replay=replay, demo=demo)
    except (UnknownProvider, CassetteError, ValueError) as exc:
        fail(str(exc))
    rt = runtime(ctx)
    reports: list[IngestReport]
    if json_out:
        reports = asyncio.run(run_scrape(jobs, rt.engine, rt.settings, dry_run=dry_run))
    else:
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=real_console(err_console),
            transient=True,
        ) as progress:
            task = progress.add_task("scraping " + ", ".join(j.provider.name for j in jobs), total=len(jobs))

            def done(report: IngestReport) -> None:
                progress.advance(task)
                progress.console.print(f"  {report.provider}: {report.status}")

            reports = asyncio.run(run_scrape(jobs, rt.engine, rt.settings, dry_run=dry_run, on_done=done))
    reports.sort(key=lambda r: r.provider)
    if json_out:
        emit_json([r.as_dict() | {"dry_run": dry_run} for r in reports])
    else:
        table = Table(title="scrape" + (" (dry run: nothing stored)" if dry_run else ""))
        for col in (
            "provider",
            "status",
            "offers",
            "valid",
            "new prices",
            "closed",
            "unknown names",
            "note",
        ):
            table.add_column(col, justify="right" if col not in ("provider", "status", "note") else "left")
        for r in reports:
            unknown = ", ".join(f"{k}×{v}" for k, v in r.unknown_names.items()) or "0"
            assumed = "\n".join(f"{k} → {v} (assumed)" for k, v in r.assumed_names.items())
            table.add_row(
                r.provider,
                f"[{STATUS_STYLE.get(r.status, '')}]{r.status}[/]",
                str(r.offers_seen),
                str(r.offers_valid),
                str(r.price_rows),
                str(r.offers_closed),
                unknown,
                "\n".join(x for x in (r.error, assumed) if x),
            )
        show_table(table, drop=("closed", "valid", "new prices"), wrap=("unknown names", "note"), wide=wide)
    if any(r.status == RunStatus.failed for r in reports):
        raise typer.Exit(1)


@commands.command("providers")
def providers_cmd(
    ctx: typer.Context,
    json_out: bool = typer.Option(False, "--json"),
    wide: bool = typer.Option(False, "--wide", help="Every column, past the terminal's width if need be."),
) -> None:
    """Every provider: kind, credentials, interval, last run, offers, unknown names, data terms."""
    rt = runtime(ctx)
    rows = provider_status(rt.engine, rt.settings)
    if json_out:
        emit_json(rows)
        return
    table = Table(title="providers")
    for col in (
        "provider",
        "kind",
        "credentials",
        "interval",
        "last run",
        "source",
        "status",
        "offers",
        "unknown",
        "republish",
        "error",
    ):
        table.add_column(col)
    for r in rows:
        creds = "none needed" if not r["credentials"] else ("set" if r["credentials_set"] else "missing")
        last = r["last_run"] or {}
        table.add_row(
            r["name"],
            r["kind"],
            creds,
            f"{r['default_interval_s'] // 60} min",
            _when(last.get("started_at")),
            last.get("source", "-"),
            last.get("status", "-"),
            str(r["current_offers"]),
            str(r["unknown_names"]),
            republish_label(r["terms"]),
            escape(last.get("error") or ""),
        )
    show_table(table, drop=("interval", "kind", "unknown", "credentials", "republish"), wrap=("error",), wide=wide)
    console.print(
        # Broken where a phrase ends: wrapped by rich at 80 columns, the parentheses fell across lines.
        "republish: what each source's terms say, as read on a date (providers/terms.toml):\n"
        "yes, no or unknown; and whether this install's export includes it\n"
        "(TRACKER_REPUBLISH; docs/configuration.md)."
    )
    if rows and all((r["last_run"] or {}).get("source") == "demo" for r in rows):
        console.print(
            "[yellow]every last run was a demo replay[/] (recorded responses, `scrape --demo`):\n"
            "no provider has been asked live yet."
        )


def republish_label(terms: dict[str, Any]) -> str:
    """'unknown (2026-12-02), labelled' — the terms as read, then what this install's export does."""
    read = f" ({terms['read_on']})" if terms.get("read_on") else ""
    done = "exported" if terms["republished"] else "left out"
    if terms["republished"] and terms["republish"] == "unknown":
        done = "labelled"
    return f"{terms['republish']}{read}, {done}"


def _when(started: Any) -> str:
    """A run's start to the minute (UTC), or "never"."""
    if started is None:
        return "never"
    return started.strftime("%m-%d %H:%M") if hasattr(started, "strftime") else str(started)[:16]


@commands.command("record")
def record(
    provider: str | None = typer.Argument(None, help="Provider to capture live."),
    all_providers_: bool = typer.Option(False, "--all", help="Re-record every provider that has credentials."),
    out: Path | None = typer.Option(
        None, "--out", help="Cassette file (default: <provider>.json here); with --all, a directory."
    ),
) -> None:
    """Capture a live cassette (needs network and the provider's credentials); secrets are scrubbed."""
    settings = get_settings()
    if all_providers_:
        if provider is not None:
            fail("name a provider or pass --all, not both")
        if out is None:
            fail("--all needs --out DIR: the directory to write every <provider>.json to")
        if out.exists() and not out.is_dir():
            fail(f"--out {out} is a file; with --all it names a directory")
        _record_all(settings, out)
        return
    if provider is None:
        fail("name a provider to record, or pass --all")
    try:
        cls = get_provider(provider)
    except UnknownProvider as exc:
        fail(str(exc))
    if cls.kind == ProviderKind.static_sheet:
        fail(f"{provider} is a static sheet: there is nothing to record")
    secrets, missing = credentials_of(cls, settings)
    if missing:
        fail(f"set {', '.join(missing)} to record {provider}")
    path = out or Path(f"{provider}.json")
    try:
        console.print(_record_one(cls, secrets, settings, path))
    except Exception as exc:
        fail(f"recording {provider} failed: {exc}")


def _record_all(settings: Settings, directory: Path) -> None:
    """Every provider in turn, each to `directory`/<name>.json; one failing leaves the others recorded (and
    the exit status 1)."""
    directory.mkdir(parents=True, exist_ok=True)
    failed = False
    for name, cls in all_providers().items():
        if cls.kind == ProviderKind.static_sheet:
            console.print(f"skipped {name}: a static sheet has nothing to record")
            continue
        secrets, missing = credentials_of(cls, settings)
        if missing:
            console.print(f"skipped {name}: no credentials (set {', '.join(missing)})")
            continue
        try:
            console.print(f"{name}: " + _record_one(cls, secrets, settings, directory / f"{name}.json"))
        except Exception as exc:
            failed = True
            err_console.print(f"[bold red]failed[/] {name}: {escape(str(exc))}", highlight=False)
    if failed:
        raise typer.Exit(1)


def _live_transport(cls: type[Provider]) -> httpx.AsyncBaseTransport:
    """The network under the recorder: one place for a test to put a cassette instead."""
    return httpx.AsyncHTTPTransport()


def _record_one(cls: type[Provider], secrets: dict[str, str], settings: Settings, path: Path) -> str:
    """Fetch `cls` live through a recorder and save the scrubbed cassette at `path` (only once the fetch
    succeeded: a failed recording never replaces a good cassette)."""
    recorder = RecordingTransport(inner=_live_transport(cls), secrets=list(secrets.values()))

    async def go() -> int:
        async with httpx.AsyncClient(transport=recorder, timeout=settings.http_timeout_s) as client:
            # Through fetch_offers, like every scrape: size caps and secret scrubbing apply here too.
            result = await fetch_offers(cls, FetchContext(client=client, credentials=secrets))
        return len(result.offers)

    count = asyncio.run(go())
    recorder.cassette(cls.name).save(path)
    return f"recorded {len(recorder.interactions)} exchanges ({count} offers) to {path}"
