"""`gpu-tracker cheapest` and `gpu-tracker history`: the market for a job, and a card over time."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import typer

from tracker.cli.job_options import with_job
from tracker.cli.output import console, emit_json, fail
from tracker.estimate.job import JobInput

# Domain modules are imported inside the commands: a command-line call loads only what it runs.


def _pricing(values: list[str] | None) -> list[str] | None:
    from providers.contract import Pricing

    try:
        return [Pricing(v).value for v in values] if values else None
    except ValueError:
        fail(f"--pricing must be one of {', '.join(p.value for p in Pricing)}")


commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("cheapest")
@with_job
def cheapest(
    ctx: typer.Context,
    job: JobInput,
    gpu: str | None = typer.Option(None, "--gpu", help="Only this card, family or alias."),
    provider: list[str] = typer.Option(None, "--provider", help="Only these providers (repeatable)."),
    pricing: list[str] = typer.Option(None, "--pricing", help="on_demand | spot | reserved (repeatable)."),
    region: list[str] = typer.Option(None, "--region", help="Region or prefix (repeatable)."),
    max_hours: float | None = typer.Option(None, "--max-hours", min=0),
    no_reference: bool = typer.Option(False, "--no-reference", help="Leave out static reference sheets."),
    aggregated: str = typer.Option(
        "include", "--aggregated", help="Offers resold by aggregators: include | exclude | dedupe (each machine once)."
    ),
    available: bool = typer.Option(False, "--available", help="Only offers the provider says are available."),
    verified: bool = typer.Option(False, "--verified", help="Only verified machines (stated, or a cloud's own)."),
    datacenter: bool = typer.Option(False, "--datacenter", help="Only datacenter machines (stated, or a cloud's own)."),
    min_reliability: float | None = typer.Option(
        None, "--min-reliability", min=0, max=1, help="Host reliability score, 0-1."
    ),
    cloud: str | None = typer.Option(None, "--cloud", help="secure | community (RunPod's cloud tiers)."),
    interconnect: str | None = typer.Option(
        None, "--interconnect", help="nvswitch | nvlink | xgmi | pcie | infiniband | roce | rdma | ethernet."
    ),
    min_nodes: int | None = typer.Option(None, "--min-nodes", help="Least nodes rented together or available now."),
    sort_by: str = typer.Option("cost_per_run", "--sort", help="cost_per_run | hours | usd_per_mtok"),
    show_unfit: bool = typer.Option(False, "--show-unfit", help="Also list offers the job does not fit."),
    best_per_card: bool = typer.Option(False, "--best-per-card"),
    top: int = typer.Option(20, "--top", min=1, max=1000),
    gpu_only: bool = typer.Option(False, "--gpu-only", help="Rank on GPU time alone (no disk, transfer, spot loss)."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Live offers ranked by what this fine-tuning run would cost on them (the whole run: GPU time,
    billing rounding, disk, data transfer and, on spot, expected interruptions)."""
    from tracker.catalog.gpus import GpuNameError
    from tracker.cli.context import runtime
    from tracker.clock import utcnow
    from tracker.costs import RunPlan, plan_for
    from tracker.estimate import EstimateError, PreparedJob, prepare
    from tracker.estimate.serving import PreparedServing, prepare_serving
    from tracker.market.offers import gpu_ids_for
    from tracker.market.rank import RankFilters, RankOptions
    from tracker.market.service import rank_offers
    from tracker.storage.engine import session_scope

    if sort_by not in ("cost_per_run", "hours", "usd_per_mtok"):
        fail("--sort must be cost_per_run, hours or usd_per_mtok")
    try:
        prepared: PreparedJob | PreparedServing
        plan: RunPlan | None = None  # an inference job is priced on GPU time alone
        if job.kind == "inference":
            prepared = prepare_serving(job.serving_spec(allow_model_files=True))
        else:
            spec = job.spec(allow_model_files=True)
            prepared = prepare(spec, job.assumptions)
            plan = plan_for(job, spec)
        filters = RankFilters(
            providers=provider or None, pricing=_pricing(pricing), regions=region or None,
            gpu_ids=gpu_ids_for(gpu) if gpu else None, max_hours=max_hours, include_reference=not no_reference,
            available_only=available, verified_only=verified, datacenter_only=datacenter,
            min_reliability=min_reliability, cloud=cloud, aggregated=aggregated, interconnect=interconnect,
            min_nodes=min_nodes,
        )  # fmt: skip
    except (EstimateError, GpuNameError) as exc:
        fail(getattr(exc, "message", None) or str(exc))
    except ValueError as exc:  # a filter out of range (tracker.market.quality, tracker.market.aggregated)
        fail(str(exc))
    options = RankOptions(sort_by=sort_by, include_unfit=show_unfit, best_per_card=best_per_card, limit=top,  # type: ignore[arg-type]
                          gpu_only=gpu_only)  # fmt: skip
    rt = runtime(ctx)
    with session_scope(rt.engine) as session:
        result = rank_offers(rt.engine, session, rt.settings, utcnow(), prepared, filters, options, plan=plan)
    if json_out:
        emit_json(result["rows"])
        return
    _print_rank(result)


def _amount(value: Any, places: int) -> str:
    return "-" if value is None else f"{value:.{places}f}"


def _print_rank(result: dict[str, Any]) -> None:
    from rich.table import Table

    from tracker.market.fabric import label as fabric_label

    job = result["job"]
    fitting = f"({result['fitting']} of {result['considered']} live offers fit)"
    if job.get("kind") == "inference":  # serving: hours and $/run are for the month's load (else 1M output tokens)
        users = job["concurrency"] or "most that fit"
        console.print(f"[bold]job:[/] {job['model_name']} · {job['precision']} · {job['prompt_tokens']:,} in / "
                      f"{job['output_tokens']:,} out · {users} users · {job['engine']}   {fitting}")  # fmt: skip
    else:
        console.print(
            f"[bold]assumptions:[/] {result['assumptions']}   [bold]job:[/] {job['model_name']} · {job['method']}"
            f" · {job['tokens'] / 1e6:,.2f}M tokens   {fitting}"
        )
    table = Table()
    cols = ("#", "provider", "gpu", "n", "pricing", "region", "fabric", "$/h", "tok/s", "hours", "$/run", "$ GPU",
            "$/1M tok", "age")  # fmt: skip
    for col in cols:
        table.add_column(col, justify="left" if col in ("provider", "gpu", "pricing", "region", "fabric") else "right")
    for i, r in enumerate(result["rows"], 1):
        label = r["provider"] + (" (ref)" if r["reference"] else "") + (" (demo)" if r["demo"] else "")
        label += f" via {r['via']}" if r.get("via") else ""
        age = f"{r['price_age_s'] / 3600:.1f}h"
        table.add_row(
            str(i), label, r["gpu"] + ("" if r["fits"] else " [red](does not fit)[/]"), f"{r['gpus']:g}", r["pricing"],
            r["region"] or "-", fabric_label(r.get("fabric")), f"{r['price_per_hour']:.2f}",
            f"{r['tokens_per_second']:,.0f}", f"{r['hours']:.2f}",
            _amount(r["cost_per_run"], 2), _amount(r.get("gpu_cost_per_run", r["cost_per_run"]), 2),
            _amount(r["usd_per_mtok"], 4), age,
        )  # fmt: skip
    console.print(table)
    if result.get("plan") is not None:
        for i, r in enumerate(result["rows"], 1):
            if (why := _beyond(r.get("cost"))) != "-":
                console.print(f"  {i}. beyond GPU time: {why}")
        console.print("beyond GPU time: components over 1¢ (* a default, not the provider's figure); spot: the range"
                      " from no interruption to the 95th percentile.  --gpu-only ranks on GPU time alone.")  # fmt: skip


def _beyond(cost: dict[str, Any] | None) -> str:
    """The components past GPU time worth a cent, each starred where its terms were defaulted."""
    if not cost:
        return "-"
    parts = [
        f"{name} {value:.2f}{'*' if cost['known'][name] == 'default' else ''}"
        for name, value in cost["components"].items()
        if name != "gpu_time" and value >= 0.01
    ]
    if cost.get("spot"):
        parts.append(f"range {cost['spot']['range']['low']:.2f}-{cost['spot']['range']['high']:.2f}")
    return ", ".join(parts) or "-"


@commands.command("history")
def history(
    ctx: typer.Context,
    gpu: str = typer.Argument(..., help='Card, family or alias, e.g. "H100 SXM".'),
    days: int = typer.Option(30, "--days", min=1, max=3650),
    interval: str = typer.Option("1d", "--interval", help="1h | 1d | 1w"),
    pricing: str = typer.Option("on_demand", "--pricing"),
    no_reference: bool = typer.Option(False, "--no-reference"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Min / p25 / median / p75 of $/GPU-hour per bucket, exact from the price history."""
    from tracker.catalog.gpus import GpuNameError
    from tracker.cli.context import runtime
    from tracker.clock import utcnow
    from tracker.market.offers import gpu_ids_for
    from tracker.market.service import market_history
    from tracker.market.statistics import INTERVALS
    from tracker.storage.engine import session_scope

    if interval not in INTERVALS:
        fail(f"--interval must be one of {', '.join(INTERVALS)}")
    (kind,) = _pricing([pricing]) or ["on_demand"]
    try:
        ids = gpu_ids_for(gpu)
    except GpuNameError as exc:
        fail(str(exc))
    rt = runtime(ctx)
    now = utcnow()
    with session_scope(rt.engine) as session:
        rows = market_history(
            session, rt.settings, now, gpu_ids=ids, pricing=kind, interval=interval,
            start=now - timedelta(days=days), end=now, include_reference=not no_reference,
        )  # fmt: skip
    if json_out:
        emit_json(rows)
        return
    from rich.table import Table

    table = Table(title=f"{gpu} ({', '.join(ids)}) {kind} $/GPU-hour, {interval} buckets")
    for col in ("bucket", "min", "p25", "median", "p75", "max", "offers", "providers"):
        table.add_column(col, justify="left" if col == "bucket" else "right")
    for r in rows:
        table.add_row(r["bucket"].strftime("%Y-%m-%d %H:%M"), *(f"{r[k]:.4f}" for k in ("min", "p25", "median",
                      "p75", "max")), str(r["offers"]), str(r["providers"]))  # fmt: skip
    console.print(table)
