"""`gpu-tracker terms`: a card's $/GPU-hour per commitment (on-demand, spot, 1 day ... 3 years), now and per day."""

from __future__ import annotations

from typing import Any

import typer

from tracker.cli.output import console, emit_json, fail, show_table

# Domain modules are imported inside the command: a command-line call loads only what it runs.

commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("terms")
def terms_cmd(
    ctx: typer.Context,
    gpu: str = typer.Argument(..., help='Card, family or alias, e.g. "H100".'),
    days: int | None = typer.Option(None, "--days", min=1, max=365, help="Also the daily median of each term."),
    no_reference: bool = typer.Option(False, "--no-reference", help="Leave static reference sheets out."),
    json_out: bool = typer.Option(False, "--json"),
    wide: bool = typer.Option(False, "--wide", help="Every column, past the terminal's width if need be."),
) -> None:
    """The term structure: each commitment's distribution of $/GPU-hour apart (offers, min, p25, median,
    p75, providers), never blended."""
    from tracker.catalog.gpus import GpuNameError
    from tracker.cli.context import require_prices, runtime
    from tracker.clock import utcnow
    from tracker.market.offers import gpu_ids_for
    from tracker.market.service import market_terms
    from tracker.storage.engine import session_scope

    try:
        ids = gpu_ids_for(gpu)
    except GpuNameError as exc:
        fail(str(exc))
    rt = runtime(ctx)
    now = utcnow()
    with session_scope(rt.engine) as session:
        answer = market_terms(
            rt.engine, session, rt.settings, now, gpu_ids=ids, days=days, include_reference=not no_reference
        )
        if not answer["cards"]:
            require_prices(session, json_out=json_out)
    if json_out:
        emit_json({"gpu": gpu, "gpu_ids": ids} | answer)
        return
    if not answer["cards"]:
        console.print(f"no live offers of {gpu} ({', '.join(ids)})")
        return
    for card in answer["cards"]:
        _now_table(card, wide)
        if days is not None:
            _days_table(card, days, wide)


def _usd(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def _now_table(card: dict[str, Any], wide: bool) -> None:
    from rich.table import Table

    table = Table(title=f"{card['gpu']}: $/GPU-hour by commitment, now")
    for col in ("term", "offers", "min", "p25", "median", "p75", "providers"):
        table.add_column(col, justify="left" if col == "term" else "right")
    for p in card["terms"]:
        table.add_row(
            p["label"], str(p["offers"]), *(_usd(p[k]) for k in ("min", "p25", "median", "p75")), str(p["providers"])
        )
    show_table(table, drop=("providers", "p25", "p75"), wide=wide, more="--json shows every field")


def _days_table(card: dict[str, Any], days: int, wide: bool) -> None:
    from rich.table import Table

    series = [s for s in card["history"] if s["days"]]
    if not series:
        console.print(f"{card['gpu']}: no price history in the last {days} days")
        return
    by_day: dict[Any, dict[str, Any]] = {}
    for s in series:
        for d in s["days"]:
            by_day.setdefault(d["day"], {})[s["label"]] = d
    table = Table(title=f"{card['gpu']}: daily median $/GPU-hour (offers), last {days} days")
    table.add_column("day")
    for s in series:
        table.add_column(s["label"], justify="right")
    for day in sorted(by_day):
        cells = [by_day[day].get(s["label"]) for s in series]
        table.add_row(
            day.strftime("%Y-%m-%d"), *("-" if c is None else f"{c['median']:.2f} ({c['offers']})" for c in cells)
        )
    # The longest commitments leave first on a narrow terminal; --wide or --json shows them.
    show_table(table, drop=[s["label"] for s in reversed(series)], wide=wide, more="--wide shows every term")
