"""`gpu-tracker plan FILE`: a workload mix placed on live offers, the fleet it makes, and its power."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from tracker.cli.output import console, emit_json, fail, show_table

commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("plan")
def plan(
    ctx: typer.Context,
    file: Path | None = typer.Argument(None, help="The workload mix, YAML or JSON (see --schema)."),
    json_out: bool = typer.Option(False, "--json", help="The whole plan as JSON."),
    power_budget_kw: float | None = typer.Option(
        None,
        "--power-budget-kw",
        min=0.001,
        max=1e7,  # the mix's own bound: `inf` would print Infinity
        help="Facility power cap for the fleet, kW (overrides the file's).",
    ),
    overhead: float | None = typer.Option(
        None, "--overhead", min=1, max=5, help="PUE-like factor on the cards' TDP (overrides the file's; default 1.3)."
    ),
    history_days: int | None = typer.Option(
        None, "--history", min=1, max=3650, help="Also the plan over the last N days (daily median prices)."
    ),
    schema: bool = typer.Option(False, "--schema", help="Print the mix's JSON Schema and exit."),
) -> None:
    """Each workload on the live offer that runs its month cheapest; the mixed fleet against one card type."""
    from tracker.plan.mix import MixError, load_mix, plan_schema

    if schema:
        emit_json(plan_schema())
        return
    if file is None:
        fail("give the workload mix file (YAML or JSON), or --schema")
    text = read_mix_file(file)
    try:
        mix = load_mix(text, file.name)
    except MixError as exc:
        fail(f"{file.name}: {exc.message}")

    from tracker.cli.context import runtime
    from tracker.clock import utcnow
    from tracker.plan.service import options_for, plan_history, plan_live
    from tracker.storage.engine import session_scope

    options = options_for(mix, power_budget_kw, overhead)
    rt = runtime(ctx)
    now = utcnow()
    with session_scope(rt.engine) as session:
        result = plan_live(rt.engine, session, rt.settings, now, mix, options)
        if history_days:
            result["history"] = plan_history(rt.engine, session, rt.settings, now, mix, options, days=history_days)
    if json_out:
        emit_json(result)
        return
    _print_plan(result)
    from tracker.cli.api_view import print_plan_apis

    print_plan_apis(result)  # serving workloads: the per-token APIs beside self-hosting


def read_mix_file(file: Path, flag: str = "") -> str:
    """A mix file's text (also `alerts add --plan`'s); one-line failure if it cannot be read or is too long."""
    from tracker.plan.mix import MAX_SOURCE_CHARS

    where = f"{flag} " if flag else ""
    try:
        # At most one character past the limit: a huge file (or /dev/zero) is refused, never read whole.
        with file.open(encoding="utf-8") as handle:
            text = handle.read(MAX_SOURCE_CHARS + 1)
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{where}cannot read {file}: {getattr(exc, 'strerror', None) or exc}")
    if len(text) > MAX_SOURCE_CHARS:
        fail(f"{where}{file.name}: the mix is over {MAX_SOURCE_CHARS:,} characters")
    return text


def _usd(value: Any, places: int = 2) -> str:
    return "-" if value is None else f"${value:,.{places}f}"


def _print_plan(result: dict[str, Any]) -> None:
    from rich.table import Table

    console.print(f"[bold]Plan[/] on {result['live_offers']:,} live offers, {result['hours_per_month']:g} h a month")
    # Few, wide columns: the table stays readable in an 80-column terminal.
    table = Table(title="Assignments")
    for col in ("workload", "placement", "$/month", "nodes", "GPU-h/month"):
        table.add_column(col, justify="left" if col in ("workload", "placement") else "right")
    for w in result["workloads"]:
        c = w["choice"]
        if c is None:
            table.add_row(f"{w['name']} ({w['kind']})", f"[red]{w['status']}[/]", "-", "-", "-")
            continue
        label = c["provider"] + (" (ref)" if c["reference"] else "") + (" (demo)" if c["demo"] else "")
        table.add_row(
            f"{w['name']} ({w['kind']})",
            f"{c['gpus_per_node']}× {c['gpu']} {c['pricing']} at {_usd(c['price_per_hour'])}/h, {label}",
            _usd(c["monthly_cost"]),
            str(c["nodes_at_peak"]),
            f"{c['gpu_hours_per_month']:,.1f}",
        )
    show_table(table, wrap=("placement", "workload"))
    for w in result["workloads"]:
        if w["choice"] is None:
            console.print(f"  {w['name']}: [red]{w['status']}[/]: {w['reason']}")
        if w["runner_up"]:
            console.print(f"  {w['name']}: runner-up {w['runner_up']['gpu']} lost by {w['runner_up']['why_lost']}")
        if w.get("uncapped_choice"):
            console.print(f"  {w['name']}: {w['reason']}")

    fleet = result["fleet"]
    ft = Table(title="Fleet")
    for col in ("card", "GPUs at peak", "GPU-h/month", "$/month", "kW", "workloads"):
        ft.add_column(col, justify="left" if col in ("card", "workloads") else "right")
    for c in fleet["cards"]:
        ft.add_row(
            c["gpu"],
            str(c["gpus_at_peak"]),
            f"{c['gpu_hours_per_month']:,.1f}",
            _usd(c["monthly_cost"]),
            "-" if c["power_kw"] is None else f"{c['power_kw']:,.2f}",
            ", ".join(c["workloads"]),
        )
    ft.add_row(
        "[bold]total[/]",
        str(fleet["gpus_at_peak"]),
        f"{fleet['gpu_hours_per_month']:,.1f}",
        f"[bold]{_usd(fleet['monthly_cost'])}[/]",
        "-" if fleet["power_kw"] is None else f"{fleet['power_kw']:,.2f}",
        "",
    )
    show_table(ft, wrap=("workloads",))
    _print_summary(result)


def _print_summary(result: dict[str, Any]) -> None:
    """The single-card comparison, power, what was not planned and the plan over time."""
    single = result["single_card"]
    best = single["best"]
    if best is None:
        console.print(f"[bold]Single card type:[/] {single.get('note') or 'nothing planned'}")
    else:
        console.print(
            f"[bold]Single card type:[/] best is {best['gpu']} at {_usd(best['monthly_cost'])}/month "
            f"({best['gpus_at_peak']} GPUs at peak); the mixed fleet saves {_usd(single['saving'])}"
            f" ({single['saving_pct']:.1f}%). {single['cards_unable']} card types cannot run the whole mix."
        )
    p = result["power"]
    line = f"[bold]Power:[/] {_kw(p['power_kw'])} at peak (TDP × overhead {p['overhead_factor']:g})"
    if p["budget_kw"] is not None:
        if p["within_budget"]:
            moved = f", moving {', '.join(p['changed'])}" if p["changed"] else ""
            line += (
                f", within the {p['budget_kw']:g} kW budget ({p['algorithm']}); the cap costs "
                f"{_usd(p['cap_cost'])}/month{moved}"
            )
        else:
            line += f"; [red]over the {p['budget_kw']:g} kW budget[/]: {p.get('reason', '')}"
    console.print(line)
    for card in p["per_card"]:
        per = ", ".join(f"{name} {tps:,.0f}" for name, tps in card["workloads"].items())
        console.print(
            f"  {card['gpu']}: {card['kw_per_gpu']} kW/GPU, {card['gpus_per_100kw']} GPUs per 100 kW; "
            f"tokens/s per kW: {per}"
        )
    if result["unplanned"]:
        console.print(f"[yellow]Not planned:[/] {', '.join(result['unplanned'])} (see the reasons above)")
    history = result.get("history")
    if history:
        s = history["summary"]
        console.print(
            f"[bold]Over {history['days']} days:[/] the mixed fleet was cheaper than the best single card "
            f"type on {s['days_with_saving']} of {s['days_compared']} days (saving {_usd(s['min_saving'])}"
            f" to {_usd(s['max_saving'])} a month)"
        )


def _kw(value: float | None) -> str:
    return "unknown kW" if value is None else f"{value:,.2f} kW"
