"""`gpu-tracker offers`: current offers, cheapest per GPU-hour first."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from tracker.catalog.gpus import GpuNameError
from tracker.cli.context import check_providers, require_prices, runtime
from tracker.cli.filter_options import with_filters
from tracker.cli.output import capped_note, console, emit_json, fail, gpu_count, show_table
from tracker.clock import utcnow
from tracker.market.fabric import label as fabric_label
from tracker.market.filters import RANKING_ONLY, OfferFilters
from tracker.market.offers import OfferListing, current_offers, listed_rows
from tracker.storage.engine import session_scope

commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("offers")
@with_filters(exclude=RANKING_ONLY)
def offers(
    ctx: typer.Context,
    filters: OfferFilters,
    gpu: str | None = typer.Option(None, "--gpu", help='Card, family or alias, e.g. "H100", "A100 40GB".'),
    limit: int = typer.Option(50, "--limit", min=1),
    json_out: bool = typer.Option(False, "--json"),
    wide: bool = typer.Option(False, "--wide", help="Every column, past the terminal's width if need be."),
) -> None:
    """Current offers, cheapest per GPU-hour first; those past their freshness window marked (stale)."""
    check_providers(filters.providers)
    listing = OfferListing(**dict(filters), gpu=gpu, limit=limit + 1)  # one row past: was the list capped?
    rt = runtime(ctx)
    now = utcnow()
    try:
        with session_scope(rt.engine) as session:
            found = current_offers(session, listing, now=now, settings=rt.settings)
            rows = listed_rows(found[:limit], now, rt.settings)
            if not rows:
                require_prices(session, json_out=json_out)
    except GpuNameError as exc:
        fail(str(exc))
    if json_out:
        emit_json(rows)
        return
    _print(rows, gpu, more=len(found) > limit, wide=wide)


def kind_label(row: dict[str, Any]) -> str:
    """What the price is (tracker.market.price_kinds): "asking", "transacted", "floor"; "asking, closed" for an
    asking price that cannot be ordered now."""
    kind = str(row.get("price_kind") or "asking")
    return kind + (" [dim]closed[/]" if kind == "asking" and row.get("orderable") is False else "")


def _print(rows: list[dict[str, Any]], gpu: str | None, *, more: bool, wide: bool) -> None:
    table = Table(title=f"{len(rows)} offers" + (f" for {gpu}" if gpu else "") + ", cheapest per GPU-hour first")
    for col in ("provider", "gpu", "n", "pricing", "price", "region", "fabric", "$/GPU-h", "$/h", "seen"):
        table.add_column(col, justify="right" if col.startswith("$") or col == "n" else "left")
    all_demo = bool(rows) and all(r["demo"] for r in rows)  # then said once, below, not on every row
    for r in rows:
        label = (
            r["provider"]
            + (" [dim](ref)[/]" if r["reference"] else "")
            + (" [dim](demo)[/]" if r["demo"] and not all_demo else "")
            # An aggregator's resale says whose machine it is; its own listing needs no "via" itself.
            + (f" [dim]via {r['via']}[/]" if r.get("via") and r["via"] != r["provider"] else "")
            # Past its freshness window: listed, but no market statistic or ranking counts it. Said on the
            # few that are, in the column no width drops, rather than a yes on every row.
            + (" [yellow](stale)[/]" if r.get("live") is False else "")
        )
        table.add_row(
            label,
            r["gpu"] + (f" [dim]MIG {r['slice']}[/]" if r.get("slice") else ""),
            gpu_count(r["gpu_count"]),
            r["pricing"] + (f" {r['reserved_term']}" if r.get("reserved_term") else ""),
            kind_label(r),
            r["region"] or "-",
            fabric_label(r["fabric"]),
            f"{r['price_per_gpu_hour']:.4f}",
            f"{r['price_per_hour']:.4f}",
            r["last_seen"].strftime("%m-%d %H:%M"),
        )
    show_table(table, drop=("seen", "$/h", "fabric", "region", "price"), wide=wide)
    if all_demo:
        console.print("[yellow]demo prices:[/] replayed recordings (`scrape --demo`), not today's market.")
    if (note := capped_note(len(rows), more)) is not None:
        console.print(note)
