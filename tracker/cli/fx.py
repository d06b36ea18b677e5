"""`gpu-tracker fx …`: exchange rates, fetched from the ECB and stored with their day."""

from __future__ import annotations

from datetime import date

import typer
from rich.table import Table

from providers.fx.registry import DEFAULT_RATE_SOURCE, RATE_SOURCES, UnknownRateSource, get_rate_source
from tracker.cli.context import runtime
from tracker.cli.output import console, emit_json, fail
from tracker.ingest.fx import CurrencyError, currency_code, latest_rates
from tracker.pipeline.rates import update_rates_sync
from tracker.storage.engine import session_scope

fx_app = typer.Typer(
    add_completion=False,
    help="Exchange rates: fetch the daily reference rates, show the stored ones.",
    no_args_is_help=True,
)


@fx_app.command("update")
def update(
    ctx: typer.Context,
    source: str = typer.Option(
        DEFAULT_RATE_SOURCE, "--source", help="Rate source: " + ", ".join(s.name for s in RATE_SOURCES)
    ),
    demo: bool = typer.Option(False, "--demo", help="Replay the source's bundled recording (offline)."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Fetch the reference rates and store them. Exits 1 if the fetch failed (stored rates are kept)."""
    try:
        get_rate_source(source)
    except UnknownRateSource as exc:
        fail(str(exc))
    rt = runtime(ctx)
    report = update_rates_sync(rt.engine, rt.settings, source=source, mode="demo" if demo else "live")
    if json_out:
        emit_json(report.as_dict())
    elif report.status == "ok":
        out = report.as_dict()
        days = ", ".join(out["days"]) or "no day"
        console.print(
            f"{report.source}: rates of {days}: {out['inserted']} new, {out['revised']} revised,"
            f" {out['unchanged']} unchanged" + (f", {len(out['held'])} held" if out["held"] else "")
        )
        for reason in out["held"][:10]:
            console.print(f"[yellow]held[/] {reason}")
    else:
        console.print(f"[red]{report.source}: failed[/] ({report.error}); stored rates kept")
    if report.status != "ok":
        raise typer.Exit(1)


@fx_app.command("rates")
def rates(
    ctx: typer.Context,
    on: str | None = typer.Option(None, "--date", help="The rates in force on this day (YYYY-MM-DD); default: latest."),
    currency: list[str] = typer.Option(None, "--currency", help="Only these ISO 4217 codes (repeatable)."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Per currency, the latest stored rate (USD per unit), its day and source."""
    try:
        day = date.fromisoformat(on) if on else None
    except ValueError:
        fail(f"--date must be a day as YYYY-MM-DD, got {on!r}")
    try:
        wanted = {currency_code(c) for c in currency or []}
    except CurrencyError as exc:
        fail(f"--currency: {exc}")
    rt = runtime(ctx)
    with session_scope(rt.engine) as session:
        rows = [r for r in latest_rates(session, on=day) if not wanted or r["currency"] in wanted]
    if json_out:
        emit_json(rows)
        return
    table = Table(title=f"{len(rows)} exchange rates" + (f" on {day}" if day else ""))
    for col in ("currency", "USD per unit", "day", "source"):
        table.add_column(col, justify="right" if col == "USD per unit" else "left")
    for r in rows:
        table.add_row(r["currency"], f"{r['usd_per_unit']:.8f}", r["date"].isoformat(), r["source"])
    console.print(table)
