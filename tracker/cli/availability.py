"""`gpu-tracker availability`: when was a card last available per provider, and for what share of a window."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import typer

from tracker.cli.filter_options import with_filters
from tracker.cli.output import console, emit_json, fail, show_table
from tracker.market.filters import RANKING_ONLY, OfferFilters

# Domain modules are imported inside the command: a command-line call loads only what it runs.

commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("availability")
@with_filters(exclude=RANKING_ONLY)
def availability_cmd(
    ctx: typer.Context,
    filters: OfferFilters,
    gpu: str = typer.Argument(..., help='Card, family or alias, e.g. "H100".'),
    days: int = typer.Option(7, "--days", min=1, max=365, help="Window: the last this many days."),
    json_out: bool = typer.Option(False, "--json"),
    wide: bool = typer.Option(False, "--wide", help="Every column, past the terminal's width if need be."),
) -> None:
    """Per provider and card: available now, last available, and the share of the last DAYS available."""
    from tracker.catalog.gpus import GpuNameError
    from tracker.cli.context import check_providers, require_prices, runtime
    from tracker.clock import utcnow
    from tracker.market.availability import availability
    from tracker.market.offers import gpu_ids_for
    from tracker.storage.engine import session_scope

    try:
        gpu_ids = gpu_ids_for(gpu)
    except GpuNameError as exc:
        fail(str(exc))
    check_providers(filters.providers)
    rt = runtime(ctx)
    now = utcnow()
    minimum = filters.min_gpus
    with session_scope(rt.engine) as session:
        rows = availability(session, rt.settings, now, gpu_ids=gpu_ids, days=days, filters=filters)
        if not rows:
            require_prices(session, json_out=json_out)
    if json_out:
        emit_json({"as_of": now, "gpu": gpu, "gpu_ids": gpu_ids, "min_gpus": minimum, "days": days, "rows": rows})
        return
    _print(rows, gpu, minimum, days, now, wide)


def _when(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "never"
    return "now" if at >= now else at.strftime("%Y-%m-%d %H:%M")


def _print(rows: list[dict[str, Any]], gpu: str, minimum: Decimal | None, days: int, now: datetime, wide: bool) -> None:
    from rich.table import Table

    subject = f"{minimum.normalize():f}+ × {gpu}" if minimum is not None else gpu
    if not rows:
        console.print(f"no offers of {subject} on record")
        return
    table = Table(title=f"availability of {subject}, last {days} days")
    for col in ("provider", "gpu", "live", "available", "last available", "share", "since"):
        table.add_column(col, justify="right" if col in ("live", "available", "share") else "left")
    start = now - timedelta(days=days)
    for r in rows:
        # A provider that never states availability is not "never available": say so instead.
        said = r["reports_availability"] or r["last_available_at"] is not None
        since = r.get("tracked_since")
        table.add_row(
            r["provider"],
            r["gpu"],
            str(r["offers_now"]),
            str(r["available_now"]),
            _when(r["last_available_at"], now) if said else "not stated",
            f"{r['tracked_share']:.1%}" if said else "-",
            since.strftime("%m-%d %H:%M") if since is not None and since > start else f"{days}d+",
        )
    show_table(table, drop=("live", "last available", "gpu"), wide=wide)
    console.print(
        f"[dim]share: of the last {days} days since tracking began, the time at least one matching offer\n"
        f"was available. since: when the card was first on record ({days}d+: the whole window).[/]"
    )
