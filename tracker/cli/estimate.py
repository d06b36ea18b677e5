"""`gpu-tracker estimate` and `gpu-tracker calibrate`: the estimate model from the command line."""

from __future__ import annotations

from typing import Any

import typer
from rich import box
from rich.table import Table

from tracker.catalog.gpus import GpuNameError
from tracker.cli.job_options import with_job
from tracker.cli.output import console, emit_json, fail
from tracker.estimate import EstimateError, JobInput, calibrate, default_name, get_assumptions


def _assumptions_line(info: dict[str, Any]) -> str:
    tag = " (default)" if info["default"] else ""
    return f"[bold]assumptions:[/] {info['name']}{tag} — {info['title']}"


commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("estimate")
@with_job
def estimate_cmd(
    job: JobInput,
    gpu: str | None = typer.Option(None, "--gpu", help='Card or family, e.g. "H100 SXM", "4090". Default: every card.'),
    gpus: float = typer.Option(1, "--gpus", help="GPUs in the offer (one machine); below 1 is a slice of a card."),
    memory_gb: float | None = typer.Option(
        None, "--memory-gb", help="Memory per GPU, required for a slice (--gpus < 1)."
    ),
    price: str | None = typer.Option(None, "--price", help="$ per GPU-hour."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Throughput, memory per GPU and cost of a fine-tuning run, per card."""
    from pydantic import ValidationError

    from tracker.estimate.service import EstimateRequest, run_estimate


    try:
        req = EstimateRequest(**job.model_dump(exclude_unset=True), gpu=gpu, gpus=gpus, memory_gb=memory_gb,
                              price=price)  # fmt: skip
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        fail(f"--{str(error['loc'][0]).replace('_', '-')}: {error['msg']}")
    try:
        # A local user may point --model at their own config.json.
        result = run_estimate(req, allow_model_files=True)
    except (EstimateError, GpuNameError) as exc:
        fail(getattr(exc, "message", None) or str(exc))
    if json_out:
        emit_json(result)
        return
    _print_estimate(result)


def _money(value: Any, places: int) -> str:
    return "–" if value is None else f"${float(value):,.{places}f}"


def _print_estimate(result: dict[str, Any]) -> None:
    job = result["job"]
    rows = result["rows"]
    console.print(_assumptions_line(result["assumptions"]))
    what = (f"{job['model_name']} · {job['method']}"
            + (f" r{job['rank']}" if job["rank"] else "")
            + f" · seq {job['seq_len']:,} × batch {job['batch']}"
            + f" · checkpointing {'on' if job['grad_checkpointing'] else 'off'}"
            + f" · {job['tokens'] / 1e6:,.2f}M tokens")
    console.print(f"[bold]job:[/] {what}")
    if result["model_note"]:
        console.print(f"[yellow]note:[/] {result['model_note']}")
    flops = result["flops_per_token"]
    console.print(f"[bold]FLOPs/token:[/] {flops['total'] / 1e9:,.1f} G "
                  f"({flops['multiplier']:g}·N, N = {flops['n_params'] / 1e9:,.2f} B)")

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, caption=f"assumptions: {result['assumptions']['name']}")
    for col, right in (("gpu", False), ("n", True), ("VRAM/GPU", True), ("fits", False), ("tok/s", True),
                       ("hours", True), ("$/run", True), ("$/1M tok", True), ("eff.", True)):
        table.add_column(col, justify="right" if right else "left", no_wrap=col == "gpu")
    for r in rows:
        table.add_row(
            r["gpu"], f"{r['gpus']:g}", f"{r['vram_gb']:.1f} GB",
            "[green]yes[/]" if r["fits"] else "[red]no[/]", f"{r['tokens_per_second']:,.0f}",
            f"{r['hours']:,.2f}", _money(r["cost_per_run"], 2), _money(r["usd_per_mtok"], 3),
            f"{r['efficiency']:.2f}",
        )
    console.print(table)

    # Memory depends on the GPU count, not the card: one breakdown per distinct count.
    shown: set[float] = set()
    for r in rows:
        if r["gpus"] in shown:
            continue
        shown.add(r["gpus"])
        mem = Table(title=f"VRAM per GPU on {r['gpus']:g} GPU(s)", box=box.SIMPLE_HEAD, pad_edge=False)
        mem.add_column("component")
        mem.add_column("GB", justify="right")
        for name, gb in r["vram_breakdown"].items():
            if gb:
                mem.add_row(name, f"{gb:.2f}")
        mem.add_row("[bold]total[/]", f"[bold]{r['vram_gb']:.2f}[/]")
        console.print(mem)


@commands.command("calibrate")
def calibrate_cmd(
    assumptions: str | None = typer.Option(None, "--assumptions", "-a",
                                           help="Assumption set: seed, hf-peft (default), optimized."),
    all_rows: bool = typer.Option(False, "--all-rows", help="Also list rows of stacks the set does not model."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Each measured run next to its estimate, the errors, and the median absolute errors."""
    try:
        report = calibrate(assumptions, all_rows=all_rows)
    except EstimateError as exc:
        fail(exc.message)
    if json_out:
        emit_json(report.as_dict())
        return
    aset = report.assumptions
    console.print(_assumptions_line({"name": aset.name, "title": aset.title,
                                     "default": aset.name == default_name()}))
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, caption=f"assumptions: {aset.name}")
    for col in ("row", "stack", "job", "gpu", "tok/s", "est.", "err", "LOO", "VRAM GB", "est.", "err", "note"):
        table.add_column(col, justify="left" if col in ("row", "stack", "job", "gpu", "note") else "right")
    for res in report.rows:
        d = res.as_dict()
        job = f"{d['model']} {d['method']} s{d['seq_len']}×{d['batch']}"
        note = d["excluded"] or res.problem or ""
        if not note and d["excluded_tokens_per_second"]:
            note = "tok/s excluded: " + d["excluded_tokens_per_second"]
        if not note and d["excluded_vram"]:
            note = "VRAM excluded: " + d["excluded_vram"]
        if not note and d["vram_kind"] == "budget":
            note = "VRAM is the card budget the run just fits"
        if not res.in_set:
            note = "(other stack) " + note
        table.add_row(
            d["id"], d["stack"], job, f"{d['gpus']}× {d['gpu']}",
            _num(d["measured_tokens_per_second"], 0), _num(d["estimated_tokens_per_second"], 0),
            _pct(d["tokens_per_second_error"]), _pct(d["tokens_per_second_error_loo"]),
            _num(d["measured_vram_gb"], 1), _num(d["estimated_vram_gb"], 1), _pct(d["vram_error"]),
            f"[dim]{note}[/]" if note else "",
        )
    console.print(table)
    s = report.summary()
    console.print(
        f"[bold]median |error|[/] tokens/s {_pct(s['median_abs_tokens_per_second_error'], signed=False)}"
        f" over {s['tokens_per_second_rows']} rows"
        + (f" ({s['leave_one_out']}: leave-one-out by source, "
           f"{_pct(s['median_abs_tokens_per_second_error_loo'], signed=False)})" if aset.step_model else "")
        + (f" (leave-one-out {_pct(s['median_abs_tokens_per_second_error_loo'], signed=False)})"
           if aset.fitted and not aset.step_model else "")
        + f" · VRAM {_pct(s['median_abs_vram_error'], signed=False)} over {s['vram_rows']} rows"
    )
    if aset.step_model:
        per = Table(title="per stack: MdAPE (leave-one-source-out)", box=box.SIMPLE_HEAD, pad_edge=False)
        for col in ("stack", "tok/s rows", "tok/s", "LOSO", "VRAM rows", "VRAM"):
            per.add_column(col, justify="left" if col == "stack" else "right")
        for stack, st in s["per_stack"].items():
            per.add_row(stack, str(st["tokens_per_second_rows"]),
                        _pct(st["tokens_per_second_mdape"], signed=False),
                        _pct(st["tokens_per_second_mdape_loso"], signed=False), str(st["vram_rows"]),
                        _pct(st["vram_mdape"], signed=False))  # fmt: skip
        console.print(per)
        step = get_assumptions(aset.name).describe()["step"]
        console.print("[bold]step model:[/] " + "; ".join(
            f"{k}: {v}" for k, v in step.items() if k not in ("source", "link_gb_s", "activation_elements")))
        console.print("[dim]" + "; ".join(f"{k}: {v}" for k, v in step["source"].items()) + "[/]")
        return
    eff = Table(title="efficiency (fraction of dense BF16 peak)", box=box.SIMPLE_HEAD, pad_edge=False)
    eff.add_column("architecture")
    for m in ("full", "lora", "qlora"):
        eff.add_column(m, justify="right")
    for arch, by_method in get_assumptions(aset.name).describe()["efficiency"].items():
        eff.add_row(arch, *(f"{by_method[m]:.3f}" for m in ("full", "lora", "qlora")))
    console.print(eff)
    if aset.fitted:
        console.print("[dim]" + "; ".join(f"{k}: {v}" for k, v in aset.efficiency.source.items()) + "[/]")


def _num(value: float | None, places: int) -> str:
    return "–" if value is None else f"{value:,.{places}f}"


def _pct(value: float | None, *, signed: bool = True) -> str:
    if value is None:
        return "–"
    return f"{value * 100:+.1f}%" if signed else f"{value * 100:.1f}%"
