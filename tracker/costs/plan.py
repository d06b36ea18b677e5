"""The job's extras: the data, checkpoints and setup a run needs besides GPU hours, resolved once per job.

Each comes from the job (`JobInput`: every one can be set) or, when left out, is derived from the model
and method by the rules below; `RunPlan.sources` says which. Sizes are GB (10^9 bytes).

Defaults, and why:
* dataset: 4 bytes a token of one epoch (JSONL text runs ~4 characters a token);
* model download: every weight in bf16 (2 bytes), the form checkpoints are published in on the Hub;
* one checkpoint: LoRA / QLoRA save the adapter only, in fp32 with AdamW's two fp32 moments (12 bytes an
  adapter parameter; the frozen base is not saved); full fine-tuning saves the weights and the optimizer
  state: 12 bytes a parameter with an fp32 master copy (mixed precision, the default), 6 in pure bf16;
* output uploaded at the end: the adapter in fp32 (4 bytes a parameter, PEFT's default), or the full
  weights in bf16 (2 bytes a parameter);
* container image 10 GB (CUDA + PyTorch images are 8-15 GB), 2 checkpoints kept, one every 30 minutes;
* checkpoint write at 1 GB/s (a local NVMe disk writes faster; 1 GB/s also covers network volumes);
* setup: the image, the model and the data downloaded at the offer's bandwidth (tracker.costs.terms);
* restart after an interruption: the setup again (a new machine downloads everything) unless set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tracker.estimate.job import JobInput, JobSpec

__all__ = ["BYTES_PER_TOKEN", "WRITE_GB_PER_S", "RunPlan", "plan_for"]

GB = 1e9
BYTES_PER_TOKEN = 4.0
WRITE_GB_PER_S = 1.0
_ADAPTER_CHECKPOINT_BYTES = 12.0  # fp32 adapter + AdamW m and v in fp32
_FULL_CHECKPOINT_BYTES = {"mixed": 12.0, "bf16": 6.0}  # weights/master + two moments
_ADAPTER_OUTPUT_BYTES = 4.0
_FULL_OUTPUT_BYTES = 2.0
_WEIGHT_BYTES = 2.0  # bf16 on the Hub

PlanSource = Literal["set", "derived", "default"]


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What a run moves and keeps, in GB and hours; `setup_h` / `restart_h` None: from the offer's bandwidth."""

    dataset_gb: float
    model_gb: float
    image_gb: float
    checkpoint_gb: float
    checkpoints_kept: int
    output_gb: float
    checkpoint_interval_h: float
    setup_h: float | None = None
    restart_h: float | None = None
    deadline_h: float | None = None
    sources: dict[str, PlanSource] = field(default_factory=dict, compare=False)

    @property
    def download_gb(self) -> float:
        """What a fresh machine downloads before training: image, model and data."""
        return self.image_gb + self.model_gb + self.dataset_gb

    @property
    def disk_gb(self) -> float:
        """Disk the run holds at its peak: the downloads, the kept checkpoints and the output."""
        return self.download_gb + self.checkpoints_kept * self.checkpoint_gb + self.output_gb

    @property
    def checkpoint_write_h(self) -> float:
        return self.checkpoint_gb / WRITE_GB_PER_S / 3600.0

    def describe(self) -> dict[str, object]:
        return {
            "dataset_gb": round(self.dataset_gb, 3),
            "model_gb": round(self.model_gb, 3),
            "image_gb": self.image_gb,
            "checkpoint_gb": round(self.checkpoint_gb, 3),
            "checkpoints_kept": self.checkpoints_kept,
            "output_gb": round(self.output_gb, 3),
            "disk_gb": round(self.disk_gb, 3),
            "checkpoint_minutes": round(self.checkpoint_interval_h * 60, 3),
            "setup_minutes": None if self.setup_h is None else round(self.setup_h * 60, 3),
            "restart_minutes": None if self.restart_h is None else round(self.restart_h * 60, 3),
            "deadline_hours": self.deadline_h,
            "sources": dict(self.sources),
        }


def plan_for(job: JobInput, spec: JobSpec) -> RunPlan:
    """The job's extras: what `job` sets, the rest derived from `spec` (its model and method)."""
    params = float(spec.model.params.total)
    trainable = float(spec.lora_params()) if spec.trains_adapters else params
    epochs = float(job.epochs) if job.examples is not None else 1.0
    if spec.trains_adapters:
        checkpoint = trainable * _ADAPTER_CHECKPOINT_BYTES / GB
        output = trainable * _ADAPTER_OUTPUT_BYTES / GB
    else:
        checkpoint = trainable * _FULL_CHECKPOINT_BYTES[spec.precision or "mixed"] / GB
        output = trainable * _FULL_OUTPUT_BYTES / GB
    sources: dict[str, PlanSource] = {}

    def pick(name: str, given: float | None, derived: float, kind: PlanSource = "derived") -> float:
        sources[name] = "set" if given is not None else kind
        return float(given) if given is not None else derived

    set_fields = job.model_fields_set
    plan = RunPlan(
        dataset_gb=pick("dataset_gb", job.dataset_gb, spec.tokens / epochs * BYTES_PER_TOKEN / GB),
        model_gb=pick("model_gb", None, params * _WEIGHT_BYTES / GB),
        image_gb=pick("image_gb", job.image_gb if "image_gb" in set_fields else None, float(job.image_gb), "default"),
        checkpoint_gb=pick("checkpoint_gb", job.checkpoint_gb, checkpoint),
        checkpoints_kept=job.checkpoints_kept,
        output_gb=pick("output_gb", job.output_gb, output),
        checkpoint_interval_h=job.checkpoint_minutes / 60.0,
        setup_h=None if job.setup_minutes is None else job.setup_minutes / 60.0,
        restart_h=None if job.restart_minutes is None else job.restart_minutes / 60.0,
        deadline_h=job.deadline_hours,
        sources=sources,
    )
    sources["checkpoints_kept"] = "set" if "checkpoints_kept" in set_fields else "default"
    sources["checkpoint_minutes"] = "set" if "checkpoint_minutes" in set_fields else "default"
    sources["setup_minutes"] = "set" if job.setup_minutes is not None else "derived"
    sources["restart_minutes"] = "set" if job.restart_minutes is not None else "derived"
    return plan
