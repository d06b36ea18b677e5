"""`gpu-tracker offers`: current offers, cheapest per GPU-hour first."""

from __future__ import annotations

import typer
from rich.table import Table

from tracker.catalog.gpus import GpuNameError
from tracker.cli.context import runtime
from tracker.cli.filter_options import with_filters
from tracker.cli.output import console, emit_json, fail
from tracker.market.filters import OfferFilters
from tracker.market.offers import OfferListing, current_offers, offer_row
from tracker.storage.engine import session_scope

commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("offers")
@with_filters()
def offers(
    ctx: typer.Context,
    filters: OfferFilters,
    gpu: str | None = typer.Option(None, "--gpu", help='Card, family or alias, e.g. "H100", "A100 40GB".'),
    limit: int = typer.Option(50, "--limit", min=1),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Current offers, cheapest per GPU-hour first."""
    listing = OfferListing(**dict(filters), gpu=gpu, limit=limit)
    rt = runtime(ctx)
    try:
        with session_scope(rt.engine) as session:
            rows = [offer_row(o) for o in current_offers(session, listing)]
    except GpuNameError as exc:
        fail(str(exc))
    if json_out:
        emit_json(rows)
        return
    table = Table(title=f"{len(rows)} offers" + (f" for {gpu}" if gpu else ""))
    for col in ("provider", "gpu", "count", "pricing", "region", "$/GPU-h", "$/h", "last seen"):
        table.add_column(col, justify="right" if col.startswith("$") or col == "count" else "left")
    for r in rows:
        label = (
            r["provider"]
            + (" [dim](reference)[/]" if r["reference"] else "")
            + (" [dim](demo)[/]" if r["demo"] else "")
            + (f" [dim]via {r['via']}[/]" if r.get("via") else "")
        )
        table.add_row(
            label,
            r["gpu"] + (f" [dim]MIG {r['slice']}[/]" if r.get("slice") else ""),
            f"{r['gpu_count']:g}",
            r["pricing"] + (f" {r['reserved_term']}" if r.get("reserved_term") else ""),
            r["region"] or "-",
            f"{r['price_per_gpu_hour']:.4f}",
            f"{r['price_per_hour']:.4f}",
            r["last_seen"].strftime("%Y-%m-%d %H:%M"),
        )
    console.print(table)
