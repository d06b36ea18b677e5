"""`gpu-tracker gpus [NAME]`: the GPU catalog, or the cards a name resolves to."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich import box
from rich.table import Table

from tracker.catalog.gpus import GpuNameError, GpuSpec, get_catalog
from tracker.cli.output import console, emit_json, fail, show_table


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _table(specs: list[GpuSpec], title: str) -> Table:
    rows = [
        (
            s.id,
            s.family,
            f"{s.memory_gb:g}",
            s.form_factor,
            s.architecture,
            _num(s.bf16_tflops),
            _num(s.fp8_tflops),
            _num(s.bandwidth_tbs),
            _num(s.tdp_w),
        )
        for s in specs
    ]
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        caption="BF16/FP8: dense TFLOPs · TB/s: memory bandwidth · W: TDP",
    )
    # Ids and numbers keep their full width; in a narrow terminal family/form/arch give way.
    headers = ("id", "family", "GB", "form", "arch", "BF16", "FP8", "TB/s", "W")
    for i, header in enumerate(headers):
        shrinkable = header in {"family", "form", "arch"}
        widest = max([len(header), *(len(row[i]) for row in rows)])
        table.add_column(
            header,
            justify="left" if i == 0 or shrinkable else "right",
            style="bold" if i == 0 else None,
            no_wrap=not shrinkable,
            overflow="ellipsis",
            min_width=None if shrinkable else widest,
        )
    for row in rows:
        table.add_row(*row)
    return table


commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("gpus")
def gpus(
    name: str | None = typer.Argument(None, help="A card id, family or name, e.g. 'h100 sxm' or '4090'."),
    json_out: bool = typer.Option(False, "--json", help="Print the cards as JSON."),
) -> None:
    """List the GPU catalog with specs (dense BF16/FP8 TFLOPs), or the card(s) NAME resolves to."""
    catalog = get_catalog()
    if name is None:
        specs = catalog.all()
    else:
        try:
            specs = catalog.resolve(name)
        except GpuNameError as exc:
            fail(str(exc))
    if json_out:
        emit_json([asdict(s) for s in specs])
        return
    title = "GPU catalog" if name is None else f"GPUs matching {name!r}"
    show_table(_table(specs, title), drop=("arch", "family", "FP8", "W"), more="--json shows every field")
    if len(specs) == 1:
        spec = specs[0]
        if spec.aliases:
            console.print(f"also known as: {', '.join(spec.aliases)}", markup=False, highlight=False)
        if spec.notes:
            console.print(f"notes: {spec.notes}", markup=False, highlight=False)
