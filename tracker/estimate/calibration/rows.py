"""Measured runs (tracker/estimate/data/calibration.toml): one `MeasuredRow` per published run.

A row pins its job (model, method, shape, stack, cards, layout) and what was measured: tokens/s per
GPU and/or a VRAM figure, either a peak or a budget (`vram_kind = "budget"`: the card size a run just
fits into; report.py says how each is compared). Rows can be excluded, whole or per figure, with a why.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from tracker.catalog.gpus import GpuSpec, get_catalog
from tracker.estimate.architectures import DATA_DIR
from tracker.estimate.assumptions import AssumptionSet
from tracker.estimate.job import JobSpec, make_job
from tracker.estimate.memory import GB
from tracker.estimate.stacks import stack_names

METHODS = ("full", "lora", "qlora")
GIB = 1024**3


@dataclass(frozen=True, slots=True)
class MeasuredRow:
    id: str
    source: str
    stack: str
    model: str
    method: str
    rank: int
    lora_targets: str
    seq_len: int
    batch: int
    grad_checkpointing: bool
    offload_activations: bool
    long_context: bool
    gpu: str
    gpus: int
    parallelism: str  # "single" | "ddp" | "fsdp"
    tokens_per_second: float | None  # per GPU
    vram_gb: float | None  # converted to decimal GB
    vram_published: str | None
    vram_kind: str  # "peak" | "budget"
    vram_scope: str  # "device" (nvidia-smi-like, all of it) | "allocator" (PyTorch's counters: no CUDA context)
    exclude: str | None
    exclude_tokens_per_second: str | None
    exclude_vram: str | None
    note: str | None
    precision: str | None = None
    grad_accum: int = 1
    budget_fill: float = 1.0  # budget rows: expected peak / budget at the stated context
    vram_figure: float | None = None  # the memory number as printed, whatever its unit

    @property
    def is_budget(self) -> bool:
        return self.vram_kind == "budget"

    @property
    def vram_target_gb(self) -> float | None:
        """What an estimate of this row's VRAM is compared with: the peak, or budget × fill."""
        if self.vram_gb is None:
            return None
        return self.vram_gb * self.budget_fill if self.is_budget else self.vram_gb

    @property
    def uses_tps(self) -> bool:
        return self.tokens_per_second is not None and not self.exclude and not self.exclude_tokens_per_second

    @property
    def uses_vram(self) -> bool:
        return self.vram_gb is not None and not self.exclude and not self.exclude_vram

    @property
    def group(self) -> str:
        """The publication a row comes from (leave-one-source-out unit): the source's first word,
        e.g. every LLaMA-Factory wiki table is one source."""
        return self.source.split()[0]

    @property
    def eval_gpus(self) -> int:
        """GPUs the estimate is placed on: a DDP replica is one GPU; FSDP shards over all of them."""
        return self.gpus if self.parallelism == "fsdp" else 1

    def job(self) -> JobSpec:
        return make_job(
            self.model,
            self.method,
            rank=self.rank,
            lora_targets=self.lora_targets,
            seq_len=self.seq_len,
            batch=self.batch,
            grad_checkpointing=self.grad_checkpointing,
            tokens=1e6,
            offload_activations=self.offload_activations,
            enforce_max_seq_len=not self.long_context,
            stack=self.stack if self.stack in stack_names() else None,
            parallel=self.parallelism if self.parallelism in ("ddp", "fsdp") else None,
            precision=self.precision,
            grad_accum=self.grad_accum,
        )


@cache
def load_rows() -> tuple[MeasuredRow, ...]:
    with (DATA_DIR / "calibration.toml").open("rb") as fh:
        raw = tomllib.load(fh)
    rows = []
    for r in raw["row"]:
        vram = r.get("vram")
        unit = r.get("vram_unit", "GB")
        vram_gb = None if vram is None else float(vram) * (GIB / GB if unit == "GiB" else 1.0)
        rows.append(
            MeasuredRow(
                id=r["id"],
                source=r["source"],
                stack=r["stack"],
                model=r["model"],
                method=r["method"],
                rank=int(r.get("rank", 16)),
                lora_targets=r.get("lora_targets", "all-linear"),
                seq_len=int(r["seq_len"]),
                batch=int(r["batch"]),
                grad_checkpointing=bool(r["grad_checkpointing"]),
                offload_activations=bool(r.get("offload_activations", False)),
                long_context=bool(r.get("long_context", False)),
                gpu=r["gpu"],
                gpus=int(r.get("gpus", 1)),
                parallelism=r.get("parallelism", "single"),
                tokens_per_second=float(r["tokens_per_second"]) if "tokens_per_second" in r else None,
                vram_gb=vram_gb,
                vram_published=None if vram is None else f"{vram} {unit}",
                vram_kind=r.get("vram_kind", "peak"),
                vram_scope=r.get("vram_scope", "device"),
                exclude=r.get("exclude"),
                exclude_tokens_per_second=r.get("exclude_tokens_per_second"),
                exclude_vram=r.get("exclude_vram"),
                note=r.get("note"),
                precision=r.get("precision"),
                grad_accum=int(r.get("grad_accum", 1)),
                budget_fill=float(r.get("budget_fill", 1.0)),
                vram_figure=None if vram is None else float(vram),
            )
        )
    return tuple(rows)


def gpu_spec(gpu_id: str) -> GpuSpec:
    return get_catalog().get(gpu_id)  # the catalog is loaded on first use, not at import


def rows_for(aset: AssumptionSet, rows: Iterable[MeasuredRow] | None = None) -> list[MeasuredRow]:
    rows = load_rows() if rows is None else rows
    return [r for r in rows if not aset.stacks or r.stack in aset.stacks]
