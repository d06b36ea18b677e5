"""`gpu-tracker cheapest` and `gpu-tracker history`: the market for a job, and a card over time."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import typer

from tracker.cli.filter_options import with_filters
from tracker.cli.job_options import with_job
from tracker.cli.output import console, emit_json, err_console, fail, gpu_count, show_table
from tracker.estimate.job import JobInput
from tracker.market.filters import OfferFilters

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from tracker.cli.context import Runtime

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
@with_filters(exclude=["live"])  # a ranking counts live offers only
def cheapest(
    ctx: typer.Context,
    job: JobInput,
    filters: OfferFilters,
    gpu: str | None = typer.Option(None, "--gpu", help="Only this card, family or alias."),
    max_hours: float | None = typer.Option(None, "--max-hours", min=0),
    sort_by: str = typer.Option("cost_per_run", "--sort", help="cost_per_run | hours | usd_per_mtok"),
    show_unfit: bool = typer.Option(False, "--show-unfit", help="Also list offers the job does not fit."),
    best_per_card: bool = typer.Option(False, "--best-per-card"),
    top: int = typer.Option(20, "--top", min=1, max=1000),
    gpu_only: bool = typer.Option(False, "--gpu-only", help="Rank on GPU time alone (no disk, transfer, spot loss)."),
    json_out: bool = typer.Option(False, "--json"),
    all_regions: bool = typer.Option(
        False, "--all-regions", help="Every offer, not one row per listing at its cheapest region."
    ),
    wide: bool = typer.Option(False, "--wide", help="Every column, past the terminal's width if need be."),
) -> None:
    """Live offers ranked by what this fine-tuning run would cost on them (the whole run: GPU time,
    billing rounding, disk, data transfer and, on spot, expected interruptions)."""
    from tracker.catalog.gpus import GpuNameError
    from tracker.cli.context import check_providers, kept_live, require_prices, runtime
    from tracker.clock import utcnow
    from tracker.costs import RunPlan, plan_for
    from tracker.estimate import EstimateError, PreparedJob, prepare
    from tracker.estimate.serving import PreparedServing, prepare_serving
    from tracker.market.live import LIVE
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
        ranked = RankFilters(**dict(filters), gpu_ids=gpu_ids_for(gpu) if gpu else None, max_hours=max_hours)
    except (EstimateError, GpuNameError) as exc:
        fail(getattr(exc, "message", None) or str(exc))
    options = RankOptions(
        sort_by=sort_by,  # type: ignore[arg-type]  # checked against the three keys above
        include_unfit=show_unfit,
        best_per_card=best_per_card,
        limit=top,
        gpu_only=gpu_only,
        one_per_listing=not (all_regions or json_out),
    )
    check_providers(filters.providers)
    rt = runtime(ctx)
    kept_live(rt.settings)
    now = utcnow()
    with session_scope(rt.engine) as session:
        result = rank_offers(rt.engine, session, rt.settings, now, prepared, ranked, options, plan=plan)
        if not result["considered"]:
            require_prices(session, json_out=json_out)
            _say_stale_left_out(rt, session, ranked, now)
    if json_out:
        emit_json(result["rows"])
    else:
        _print_rank(result, wide=wide, top=top)
    LIVE.keep(rt.engine)  # after the answer: a user waits for the table to be written only on a miss


def _print_api_alternatives(result: dict[str, Any]) -> None:
    if "api_alternatives" in result:  # serving: the per-token APIs beside self-hosting
        from tracker.cli.api_view import print_api_alternatives

        print_api_alternatives(result["api_alternatives"])


def _serving_table(rows: list[dict[str, Any]]) -> Any:
    """Traffic, not a run: the layout each offer is served with, $ per million tokens at the load and
    the month's cost (never hours or $/run)."""
    from rich.table import Table

    spot = any(r.get("uptime") is not None for r in rows)  # spot asked for: priced at its uptime
    caption = (
        "layout: replicas x tensor parallel; $/Mtok: the whole price over output tokens "
        "at the load; in: the prefill share over input tokens"
    )
    if spot:
        caption += "; up: the share of hours a spot replica serves between interruptions (prices count it)"
    table = Table(box=None, caption=caption, caption_justify="left")
    for col in (
        "#",
        "provider",
        "gpu",
        "n",
        "layout",
        "pricing",
        *(("up",) if spot else ()),
        "region",
        "$/h",
        "tok/s",
        "users/rep",
        "TTFT",
        "$/Mtok",
        "in",
        "GPUs",
        "$/month",
    ):
        table.add_column(col, justify="left" if col in ("provider", "gpu", "layout", "pricing", "region") else "right")
    for i, r in enumerate(rows, 1):
        label = _provider_label(r, demo=False)
        gpu = r["gpu"] + ("" if r["fits"] else f" [red]({r['reason'] or 'does not fit'})[/]")
        table.add_row(
            str(i),
            label,
            gpu,
            f"{r['gpus']:g}",
            r["layout"],
            r["pricing"],
            *((_share(r.get("uptime")),) if spot else ()),
            r["region"] or "-",
            f"{r['price_per_hour']:.2f}",
            "-" if r["tokens_per_second"] is None else f"{r['tokens_per_second']:,.0f}",
            "-" if r["concurrency_per_replica"] is None else str(r["concurrency_per_replica"]),
            _amount(r["ttft_s"], 2),
            _amount(r["usd_per_mtok"], 4),
            _amount(r["usd_per_mtok_input"], 4),
            "-" if r["gpus_needed"] is None else f"{r['gpus_needed']:g}",
            _amount(r["monthly_cost"], 0),
        )
    return table


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _amount(value: Any, places: int) -> str:
    return "-" if value is None else f"{value:.{places}f}"


def _say_stale_left_out(rt: Runtime, session: Session, filters: OfferFilters, now: datetime) -> None:
    """Nothing ranked, though offers are stored: say if it is because their rate sheets are past their age
    (left out unless asked), rather than leave an empty table."""
    from tracker.market import freshness
    from tracker.market.live import LIVE

    if filters.include_stale:
        return
    listed = set(LIVE.frame(rt.engine, session)[1].providers)
    if left_out := sorted(freshness.stale_sheets(now, rt.settings) & listed - set(filters.providers or ())):
        note = f"{', '.join(left_out)}: rate sheet past its age, left out (--include-stale ranks it)"
        err_console.print(f"note: {note}", markup=False, highlight=False)


def _print_rank(result: dict[str, Any], *, wide: bool, top: int) -> None:
    from rich.markup import escape
    from rich.table import Table

    from tracker.market.fabric import label as fabric_label

    job = result["job"]
    # On a line of its own: beside the job it ran past 80 columns and wrapped mid-phrase.
    # Not starting with a number: only the table's rows do, for whoever picks them out of the text.
    fitting = f"[dim]fit the job: {result['fitting']:,} of {result['considered']:,} live offers[/]"
    if job.get("kind") == "inference":  # serving: $/Mtok at the load, the month's cost, the layout
        users = job["concurrency"] or "most that fit"
        console.print(
            f"[bold]job:[/] {job['model_name']} · {job['precision']} · {job['prompt_tokens']:,} in / "
            f"{job['output_tokens']:,} out · {users} users · {job['engine']}"
        )
    else:
        console.print(
            f"[bold]assumptions:[/] {result['assumptions']}   [bold]job:[/] {job['model_name']} · {job['method']}"
            f" · {job['tokens'] / 1e6:,.2f}M tokens"
        )
    console.print(fitting)
    if job.get("kind") == "inference":
        show_table(
            _serving_table(result["rows"]),
            wide=wide,
            drop=("in", "GPUs", "$/month", "TTFT", "users/rep", "$/h", "region", "pricing", "up", "#"),
        )
        _print_api_alternatives(result)
        return
    table = Table()
    cols = (
        "#",
        "provider",
        "gpu",
        "n",
        "pricing",
        "region",
        "fabric",
        "$/h",
        "tok/s",
        "hours",
        "$/run",
        "$ GPU",
        "$/1M tok",
        "age",
    )
    for col in cols:
        table.add_column(col, justify="left" if col in ("provider", "gpu", "pricing", "region", "fabric") else "right")
    all_demo = bool(result["rows"]) and all(r["demo"] for r in result["rows"])
    for i, r in enumerate(result["rows"], 1):
        table.add_row(
            str(i),
            _provider_label(r, demo=r["demo"] and not all_demo),
            escape(r["gpu"]) + ("" if r["fits"] else " [red](does not fit)[/]"),
            gpu_count(r["gpus"]),
            r["pricing"] + (" [yellow](sold out)[/]" if r.get("unavailable") else ""),
            _region_label(r),
            fabric_label(r.get("fabric")),
            f"{r['price_per_hour']:.2f}",
            f"{r['tokens_per_second']:,.0f}",
            f"{r['hours']:.2f}",
            _amount(r["cost_per_run"], 2),
            _amount(r.get("gpu_cost_per_run", r["cost_per_run"]), 2),
            _amount(r["usd_per_mtok"], 4),
            _age(r["price_age_s"]),
        )
    show_table(table, drop=("age", "$ GPU", "tok/s", "$/1M tok", "fabric", "$/h", "hours", "region"), wide=wide)
    if all_demo:
        console.print("[yellow]demo prices:[/] replayed recordings (`scrape --demo`), not today's market.")
    _print_notes(result, top)


def _provider_label(r: dict[str, Any], *, demo: bool) -> str:
    """The provider; a resale as its upstream via the aggregator (it is rented through the aggregator); marked
    where the price is a reference sheet's, where that sheet is past its age (stale), and where it is demo."""
    resale = r.get("via") and (r.get("upstream") or r["provider"]) != r["via"]
    name = f"{r.get('upstream') or r['provider']} via {r['via']}" if resale else r["provider"]
    marks = [m for m, on in (("ref", r["reference"]), ("stale", r.get("stale_sheet")), ("demo", demo)) if on]
    return name + "".join(f" ({m})" for m in marks)


def _region_label(r: dict[str, Any]) -> str:
    """The listing's cheapest region, and how many more regions it is offered in (folded rows)."""
    others = len(r.get("other_regions") or ())
    return (r["region"] or "-") + (f" +{others}" if others else "")


def _age(seconds: float) -> str:
    return f"{seconds / 60:.0f}m" if seconds < 3600 else f"{seconds / 3600:.1f}h"


def _print_notes(result: dict[str, Any], top: int) -> None:
    rows = result["rows"]
    if any("listings" in r for r in rows):
        console.print(
            "[dim]one row per listing (provider, instance type, pricing) at its cheapest region;\n"
            "region +N: offered in N more (--all-regions lists each).[/]"
        )
    if any(r.get("unavailable") for r in rows):
        console.print("[dim]sold out: the provider says it cannot be rented now; ranked after every other offer.[/]")
    if len(rows) == top and result["fitting"] > top:
        console.print(f"[dim]showing the top {top} of {result['fitting']:,} fitting offers (--top N shows more).[/]")
    if "api_alternatives" in result:  # serving: the per-token APIs beside self-hosting
        from tracker.cli.api_view import print_api_alternatives

        print_api_alternatives(result["api_alternatives"])
    if result.get("plan") is not None:
        for i, r in enumerate(rows, 1):
            if (why := _beyond(r.get("cost"))) != "-":
                console.print(f"  {i}. beyond GPU time: {why}")
        console.print(
            "beyond GPU time: components over 1¢ (* a default, not the provider's figure);\n"
            "spot: the range from no interruption to the 95th percentile.\n--gpu-only ranks on GPU time alone."
        )


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
    term: str | None = typer.Option(None, "--term", help="Reservation term of --pricing reserved: 1d, 7d, 1mo ... 3y."),
    no_reference: bool = typer.Option(False, "--no-reference"),
    aggregated: str = typer.Option(
        "include", "--aggregated", help="Offers resold by aggregators: include, exclude, or dedupe (each machine once)."
    ),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Min / p25 / median / p75 of $/GPU-hour per bucket, exact from the price history (reserved: one term)."""
    from tracker.catalog.gpus import GpuNameError
    from tracker.cli.context import require_prices, runtime
    from tracker.clock import utcnow
    from tracker.market.aggregated import MODES
    from tracker.market.offers import gpu_ids_for
    from tracker.market.service import market_history
    from tracker.market.statistics import INTERVALS, TermError, commitment
    from tracker.storage.engine import session_scope

    if interval not in INTERVALS:
        fail(f"--interval must be one of {', '.join(INTERVALS)}")
    if aggregated not in MODES:
        fail(f"--aggregated must be one of {', '.join(MODES)}, got {aggregated!r}")
    (kind,) = _pricing([pricing]) or ["on_demand"]
    try:
        reserved_term = commitment(kind, term, "--term")
    except TermError as exc:
        fail(str(exc))
    try:
        ids = gpu_ids_for(gpu)
    except GpuNameError as exc:
        fail(str(exc))
    rt = runtime(ctx)
    now = utcnow()
    with session_scope(rt.engine) as session:
        rows = market_history(
            session,
            rt.settings,
            now,
            gpu_ids=ids,
            pricing=kind,
            reserved_term=reserved_term,
            interval=interval,
            start=now - timedelta(days=days),
            end=now,
            include_reference=not no_reference,
            aggregated=aggregated,
        )
        if not rows:
            require_prices(session, json_out=json_out)
    if json_out:
        emit_json(rows)
        return
    from rich.table import Table

    what = f"{kind} {reserved_term}" if reserved_term else kind
    table = Table(title=f"{gpu} ({', '.join(ids)}) {what} $/GPU-hour, {interval} buckets")
    for col in ("bucket", "min", "p25", "median", "p75", "max", "offers", "providers"):
        table.add_column(col, justify="left" if col == "bucket" else "right")
    for r in rows:
        table.add_row(
            r["bucket"].strftime("%Y-%m-%d %H:%M"),
            *(f"{r[k]:.4f}" for k in ("min", "p25", "median", "p75", "max")),
            str(r["offers"]),
            str(r["providers"]),
        )
    show_table(table, drop=("providers", "p25", "p75"), more="--json shows every field")
