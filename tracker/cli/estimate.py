"""`gpu-tracker estimate` and `gpu-tracker calibrate`: the estimate model from the command line."""

from __future__ import annotations

from typing import Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from tracker.catalog.gpus import GpuNameError
from tracker.cli.job_options import with_job
from tracker.cli.output import console, emit_json, fail, show_table
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
    gpus: float | None = typer.Option(
        None,
        "--gpus",
        help="GPUs in the offer (one machine); below 1 is a slice of a card. Default: 1 "
        "(inference: the smallest machine the job fits on).",
    ),
    memory_gb: float | None = typer.Option(
        None, "--memory-gb", help="Memory per GPU, required for a slice (--gpus < 1)."
    ),
    price: str | None = typer.Option(None, "--price", help="$ per GPU-hour."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    wide: bool = typer.Option(False, "--wide", help="Every column, past the terminal's width if need be."),
) -> None:
    """Throughput, memory per GPU and cost of a fine-tuning run, per card."""
    from pydantic import ValidationError

    from tracker.estimate.service import EstimateRequest, run_estimate

    try:
        req = EstimateRequest(
            **job.model_dump(exclude_unset=True),
            gpu=gpu,
            memory_gb=memory_gb,
            price=price,
            **({} if gpus is None else {"gpus": gpus}),
        )
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
    if result.get("kind") == "inference":
        _print_serving(result, wide)
        return
    _print_estimate(result, wide)


def _print_serving(result: dict[str, Any], wide: bool) -> None:
    """An inference job (`--kind inference`): throughput, latency and $/Mtok per card, then the terms."""
    job = result["job"]
    load = f" · {job['tokens_per_month']:.3g} tokens/month" if job["tokens_per_month"] else ""
    console.print(
        f"[bold]job:[/] {job['model_name']} · {job['precision']} weights, {job['kv_precision']} KV · "
        f"{job['prompt_tokens']:,} in / {job['output_tokens']:,} out · {job['engine']}{load}"
    )
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        caption="layout: replicas x tensor parallel; users: in flight "
        "/ most that fit; $/Mtok: the whole price over output tokens; in: the prefill share over input "
        "tokens; band: 5-95 %",
    )
    for col in (
        "gpu",
        "n",
        "layout",
        "GB/GPU",
        "fits",
        "users",
        "tok/s",
        "band",
        "/user",
        "TTFT",
        "$/Mtok",
        "in",
        "GPUs",
        "$/month",
    ):
        table.add_column(col, justify="left" if col in ("gpu", "layout", "fits") else "right", no_wrap=col == "gpu")
    for r in result["rows"]:
        low, high = r["band"]["tokens_per_second"]
        table.add_row(
            r["gpu"],
            f"{r['gpus']:g}",
            r["layout"],
            f"{r['vram_gb']:.1f}",
            "[green]yes[/]" if r["fits"] else f"[red]no[/] {r['reason'] or ''}",
            f"{r['concurrency']}/{r['max_concurrency']}",
            f"{r['tokens_per_second']:,.0f}",
            f"{low:,.0f}–{high:,.0f}",
            f"{r['per_user_tokens_per_second']:,.1f}",
            f"{r['ttft_s']:.2f}",
            _money(r["usd_per_mtok"], 3),
            _money(r["usd_per_mtok_input"], 3),
            "–" if r["gpus_needed"] is None else f"{r['gpus_needed']:g}",
            _money(r["monthly_cost"], 0),
        )
    show_table(table, drop=("in", "band", "GPUs", "/user", "GB/GPU", "TTFT"), wide=wide)
    for r in result["rows"][:1]:
        console.print(
            f"[bold]{r['gpu']} × {r['gpus']:g}[/] memory GB/GPU: "
            + ", ".join(f"{k} {v:.2f}" for k, v in r["vram_breakdown"].items())
        )
        terms = ", ".join(f"{k} {v:.5f}" for k, v in r["step_time_breakdown"].items())
        reason = f" · [red]{r['reason']}[/]" if r["reason"] else ""
        console.print(f"decode step s: {terms} · prefill {r['prefill_seconds']:.4f} s{reason}")


def _money(value: Any, places: int) -> str:
    return "–" if value is None else f"${float(value):,.{places}f}"


def _checkpointing(job: dict[str, Any]) -> str:
    if not job["grad_checkpointing"]:
        return "off"
    return "selective" if job.get("selective_checkpointing") else "on"


def _print_estimate(result: dict[str, Any], wide: bool) -> None:
    job = result["job"]
    rows = result["rows"]
    console.print(_assumptions_line(result["assumptions"]))
    what = (
        f"{job['model_name']} · {job['method']}"
        + (f" r{job['rank']}" if job["rank"] else "")
        + f" · seq {job['seq_len']:,} × batch {job['batch']}"
        + f" · checkpointing {_checkpointing(job)}"
        + (f" · loss {job['loss']}" if job.get("loss") else "")
        + (f" · TP{job['tensor_parallel']} inside FSDP" if job.get("tensor_parallel", 1) > 1 else "")
        + f" · {job['tokens'] / 1e6:,.2f}M tokens"
    )
    console.print(f"[bold]job:[/] {what}")
    if result["model_note"]:
        console.print(f"[yellow]note:[/] {result['model_note']}")
    flops = result["flops_per_token"]
    console.print(
        f"[bold]FLOPs/token:[/] {flops['total'] / 1e9:,.1f} G "
        f"({flops['multiplier']:g}·N, N = {flops['n_params'] / 1e9:,.2f} B)"
    )

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, caption=f"assumptions: {result['assumptions']['name']}")
    for col, right in (
        ("gpu", False),
        ("n", True),
        ("VRAM/GPU", True),
        ("fits", False),
        ("tok/s", True),
        ("tok/s 90% band", True),
        ("hours", True),
        ("$/run", True),
        ("$/run band", True),
        ("$/1M tok", True),
        ("eff.", True),
    ):
        table.add_column(col, justify="right" if right else "left", no_wrap=col == "gpu")
    for r in rows:
        table.add_row(
            r["gpu"],
            f"{r['gpus']:g}",
            f"{r['vram_gb']:.1f} GB",
            "[green]yes[/]" if r["fits"] else "[red]no[/]",
            f"{r['tokens_per_second']:,.0f}",
            _band(r.get("tokens_per_second_low"), r.get("tokens_per_second_high"), lambda v: f"{v:,.0f}"),
            f"{r['hours']:,.2f}",
            _money(r["cost_per_run"], 2),
            _band(r.get("cost_per_run_low"), r.get("cost_per_run_high"), lambda v: _money(v, 2)),
            _money(r["usd_per_mtok"], 3),
            f"{r['efficiency']:.2f}",
        )
    show_table(table, drop=("eff.", "tok/s 90% band", "$/run band", "$/1M tok", "VRAM/GPU"), wide=wide)
    bands = {(r["band"]["efficiency_class"], r["band"]["tokens_per_second"]["basis"]) for r in rows if r.get("band")}
    for cls, basis in sorted(bands):
        console.print(f"[dim]band on {cls}: {basis}[/]")

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
    assumptions: str | None = typer.Option(
        None, "--assumptions", "-a", help="Assumption set: seed, hf-peft (default), optimized."
    ),
    all_rows: bool = typer.Option(False, "--all-rows", help="Also list rows of stacks the set does not model."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    wide: bool = typer.Option(False, "--wide", help="Every column, past the terminal's width if need be."),
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
    console.print(_assumptions_line({"name": aset.name, "title": aset.title, "default": aset.name == default_name()}))
    _print_calibration_rows(report, aset.name, wide)
    s = report.summary()
    console.print(
        f"[bold]median |error|[/] tokens/s {_pct(s['median_abs_tokens_per_second_error'], signed=False)}"
        f" over {s['tokens_per_second_rows']} rows"
        + (
            f" ({s['leave_one_out']}: leave-one-out by source, "
            f"{_pct(s['median_abs_tokens_per_second_error_loo'], signed=False)})"
            if aset.step_model
            else ""
        )
        + (
            f" (leave-one-out {_pct(s['median_abs_tokens_per_second_error_loo'], signed=False)})"
            if aset.fitted and not aset.step_model
            else ""
        )
        + f" · VRAM {_pct(s['median_abs_vram_error'], signed=False)} over {s['vram_rows']} rows"
    )
    if aset.step_model:
        _print_step_model(aset.name, s)
        return
    eff = Table(title="efficiency (fraction of dense BF16 peak)", box=box.SIMPLE_HEAD, pad_edge=False)
    eff.add_column("architecture")
    for m in ("full", "lora", "qlora"):
        eff.add_column(m, justify="right")
    for arch, by_method in get_assumptions(aset.name).describe()["efficiency"].items():
        eff.add_row(arch, *(f"{by_method[m]:.3f}" for m in ("full", "lora", "qlora")))
    show_table(eff)
    if aset.fitted:
        console.print("[dim]" + "\n".join(f"{k}: {escape(v)}" for k, v in aset.efficiency.source.items()) + "[/]")


def _print_step_model(name: str, s: dict[str, Any]) -> None:
    """The step model's per-stack errors, its fitted settings and sources, and the card speed ratios."""
    per = Table(title="per stack: MdAPE (leave-one-source-out)", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("stack", "tok/s rows", "tok/s", "LOSO", "VRAM rows", "VRAM"):
        per.add_column(col, justify="left" if col == "stack" else "right")
    for stack, st in s["per_stack"].items():
        per.add_row(
            stack,
            str(st["tokens_per_second_rows"]),
            _pct(st["tokens_per_second_mdape"], signed=False),
            _pct(st["tokens_per_second_mdape_loso"], signed=False),
            str(st["vram_rows"]),
            _pct(st["vram_mdape"], signed=False),
        )
    show_table(per)
    step = get_assumptions(name).describe()["step"]
    console.print(
        "[bold]step model:[/]\n"
        + "\n".join(
            f"  {k}: {_terms(v)}" for k, v in step.items() if k not in ("source", "link_gb_s", "activation_elements")
        )
    )
    # Escaped: a source may cite a setting as [section.key], which rich would take for a tag and drop.
    console.print(
        "[bold]sources:[/]\n[dim]" + "\n".join(f"  {k}: {escape(v)}" for k, v in step["source"].items()) + "[/]"
    )
    if s["card_ratios"]:
        ratios = Table(title="card speed ratios (same source, same job)", box=box.SIMPLE_HEAD, pad_edge=False)
        for col in ("rows", "cards", "measured", "est.", "err", "LOSO err"):
            ratios.add_column(col, justify="right" if col in ("measured", "est.", "err", "LOSO err") else "left")
        for q in s["card_ratios"]:
            ratios.add_row(
                " / ".join(q["rows"]),
                " / ".join(q["cards"]),
                f"{q['measured']:.2f}",
                f"{q['estimated']:.2f}",
                _pct(q["error"]),
                _pct(q["error_loso"]),
            )
        show_table(ratios, wrap=("rows", "cards"))


def _terms(value: Any) -> str:
    """A step-model parameter: a per-architecture table as `name value` pairs, not a Python dict."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def _print_calibration_rows(report: Any, name: str, wide: bool) -> None:
    """Each calibration row, its estimate and errors; each distinct note once, numbered, below the table."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, caption=f"assumptions: {name}")
    notes: dict[str, int] = {}  # each distinct note once, below the table: a sentence does not fit a cell
    for col in (
        "row",
        "stack",
        "job",
        "gpu",
        "tok/s",
        "est.",
        "err",
        "LOO",
        "VRAM GB",
        "VRAM est.",
        "VRAM err",
        "note",
    ):
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
            d["id"],
            d["stack"],
            job,
            f"{d['gpus']}× {d['gpu']}",
            _num(d["measured_tokens_per_second"], 0),
            _num(d["estimated_tokens_per_second"], 0),
            _pct(d["tokens_per_second_error"]),
            _pct(d["tokens_per_second_error_loo"]),
            _num(d["measured_vram_gb"], 1),
            _num(d["estimated_vram_gb"], 1),
            _pct(d["vram_error"]),
            f"[{notes.setdefault(note, len(notes) + 1)}]" if note else "",
        )
    show_table(
        table, drop=("stack", "LOO", "job", "VRAM est.", "VRAM GB", "est."), wrap=("job", "gpu", "row"), wide=wide
    )
    for note, number in notes.items():
        console.print(f"[dim][{number}] {escape(note)}[/]", highlight=False)


def _band(low: Any, high: Any, fmt: Any) -> str:
    return "–" if low is None or high is None else f"{fmt(float(low))}–{fmt(float(high))}"


def _num(value: float | None, places: int) -> str:
    return "–" if value is None else f"{value:,.{places}f}"


def _pct(value: float | None, *, signed: bool = True) -> str:
    if value is None:
        return "–"
    return f"{value * 100:+.1f}%" if signed else f"{value * 100:.1f}%"
