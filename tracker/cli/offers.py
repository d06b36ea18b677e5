"""`gpu-tracker offers`: current offers, cheapest per GPU-hour first."""

from __future__ import annotations

from decimal import Decimal

import typer
from rich.table import Table

from tracker.catalog.gpus import GpuNameError
from tracker.cli.context import runtime
from tracker.cli.output import console, emit_json, fail
from tracker.market.fabric import label as fabric_label
from tracker.market.offers import OfferFilters, current_offers, offer_row
from tracker.storage.engine import session_scope

commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("offers")
def offers(
    ctx: typer.Context,
    gpu: str | None = typer.Option(None, "--gpu", help='Card, family or alias, e.g. "H100", "A100 40GB".'),
    provider: list[str] = typer.Option(None, "--provider", help="Only these providers (repeatable)."),
    pricing: list[str] = typer.Option(None, "--pricing", help="on_demand | spot | reserved (repeatable)."),
    region: list[str] = typer.Option(None, "--region", help="Region or region prefix (repeatable)."),
    min_gpus: float | None = typer.Option(None, "--min-gpus"),
    available: bool = typer.Option(False, "--available", help="Only offers the provider says are available."),
    verified: bool = typer.Option(False, "--verified", help="Only verified machines (stated, or a cloud's own)."),
    datacenter: bool = typer.Option(False, "--datacenter", help="Only datacenter machines (stated, or a cloud's own)."),
    min_reliability: float | None = typer.Option(
        None, "--min-reliability", min=0, max=1, help="Host reliability score, 0-1."
    ),
    cloud: str | None = typer.Option(None, "--cloud", help="secure | community (RunPod's cloud tiers)."),
    aggregated: str = typer.Option(
        "include", "--aggregated", help="Offers resold by aggregators: include | exclude | dedupe (each machine once)."
    ),
    interconnect: str | None = typer.Option(
        None, "--interconnect", help="nvswitch | nvlink | xgmi | pcie | infiniband | roce | rdma | ethernet."
    ),
    min_nodes: int | None = typer.Option(None, "--min-nodes", help="Least nodes rented together or available now."),
    limit: int = typer.Option(50, "--limit", min=1),
    json_out: bool = typer.Option(False, "--json"),
) -> None:

    """Current offers, cheapest per GPU-hour first."""
    try:
        filters = OfferFilters(
            gpu=gpu,
            providers=provider or None,
            pricing=pricing or None,
            regions=region or None,
            min_gpus=Decimal(str(min_gpus)) if min_gpus is not None else None,
            available_only=available,
            verified_only=verified,
            datacenter_only=datacenter,
            min_reliability=min_reliability,
            cloud=cloud,
            aggregated=aggregated,
            interconnect=interconnect,
            min_nodes=min_nodes,
            limit=limit,
        )
    except ValueError as exc:
        fail(str(exc))
    rt = runtime(ctx)
    try:
        with session_scope(rt.engine) as session:
            rows = [offer_row(o) for o in current_offers(session, filters)]
    except GpuNameError as exc:
        fail(str(exc))
    if json_out:
        emit_json(rows)
        return
    table = Table(title=f"{len(rows)} offers" + (f" for {gpu}" if gpu else ""))
    for col in ("provider", "gpu", "count", "pricing", "region", "fabric", "$/GPU-h", "$/h", "last seen"):
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
            r["gpu"],
            f"{r['gpu_count']:g}",
            r["pricing"] + (f" {r['reserved_term']}" if r.get("reserved_term") else ""),
            r["region"] or "-",
            fabric_label(r["fabric"]),
            f"{r['price_per_gpu_hour']:.4f}",
            f"{r['price_per_hour']:.4f}",
            r["last_seen"].strftime("%Y-%m-%d %H:%M"),
        )
    console.print(table)
