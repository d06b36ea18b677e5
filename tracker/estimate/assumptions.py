"""Named, inspectable assumption sets (tracker/estimate/data/assumptions.toml).

A set bundles the FLOPs accounting, the efficiency model, the memory knobs and the multi-GPU
scaling used by an estimate. The default is `hf-peft`: it is what most people actually run
(transformers + PEFT + bitsandbytes), and it is the conservative choice on both axes — a job
that fits under hf-peft also fits under the leaner Unsloth/torchtune accounting, and its
efficiencies are the lower ones. Recommending a card that then runs out of memory costs a user
a failed run; recommending one a size too big costs a few dollars.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from tracker.estimate.architectures import DATA_DIR
from tracker.estimate.errors import UnknownAssumptions
from tracker.estimate.flops import FlopsKnobs
from tracker.estimate.stacks import MemoryKnobs, get_stack
from tracker.estimate.step import StepParams, fitted_params

DEFAULT_FILE = DATA_DIR / "assumptions.toml"


def efficiency_class(architecture: str, form_factor: str) -> str:
    """The key efficiencies are looked up by: the GPU architecture, except that GeForce cards form
    one class of their own. Their catalog peak is the conservative FP32-accumulate spec at base
    boost clock, which they beat in practice (§0.3: "consumer cards reach ~0.55-0.6 of their
    FP32-acc spec"), so a factor measured on a 4090 must not leak onto an L40S of the same silicon."""
    return "consumer" if form_factor == "consumer" else architecture


@dataclass(frozen=True, slots=True)
class Prior:
    factor: float
    why: str


@dataclass(frozen=True, slots=True)
class EfficiencyModel:
    """log e = level[method] + arch[architecture]; anything not fitted comes from the priors."""

    level: dict[str, float]  # log-efficiency on the reference architecture, per method
    arch: dict[str, float]  # log-factor vs the reference architecture
    default_arch: float
    source: dict[str, str] = field(default_factory=dict)  # "method:lora" / "arch:ada" -> "fit" | "prior"

    def __call__(self, architecture: str, method: str) -> float:
        return math.exp(self.level[method] + self.arch.get(architecture, self.default_arch))

    def provenance(self, architecture: str, method: str) -> str:
        m = self.source.get(f"method:{method}", "prior")
        a = self.source.get(f"arch:{architecture}", "prior" if architecture in self.arch else "default prior")
        return f"method {m}, architecture {a}"

    @classmethod
    def constant(cls, value: float) -> EfficiencyModel:
        level = {m: math.log(value) for m in ("full", "lora", "qlora")}
        return cls(
            level=level,
            arch={},
            default_arch=0.0,
            source={f"method:{m}": "constant" for m in level} | {"arch:*": "constant"},
        )


@dataclass(frozen=True, slots=True)
class AssumptionSet:
    name: str
    title: str
    description: str
    stacks: tuple[str, ...]
    flops: FlopsKnobs
    memory: MemoryKnobs
    efficiency: EfficiencyModel
    fitted: bool
    peak_tflops: dict[str, float]  # per-GPU-id overrides of the catalog's dense BF16 peak
    multi_gpu: dict[str, float]  # scaling efficiency per interconnect, plus "default"
    # Step-time sets (hf-peft, optimized): the job's stack (or this default) supplies memory, and
    # tokens/s comes from the step-time model with these fitted parameters; `efficiency` is unused.
    default_stack: str | None = None
    step_params: StepParams | None = None

    @property
    def step_model(self) -> bool:
        return self.default_stack is not None

    def multi_gpu_efficiency(self, interconnect: str, gpus: float) -> float:
        if gpus <= 1:
            return 1.0
        return self.multi_gpu.get(interconnect, self.multi_gpu["default"])

    def peak_flops(self, gpu_id: str, catalog_tflops: float) -> float:
        return self.peak_tflops.get(gpu_id, catalog_tflops) * 1e12

    def describe(self) -> dict[str, Any]:
        """Everything the set assumes, for `--json` and GET /v1/... consumers."""
        archs = sorted(set(self.efficiency.arch) | {"ampere"})
        if self.step_model:
            return {
                "name": self.name,
                "title": self.title,
                "description": " ".join(self.description.split()),
                "fitted": self.fitted,
                "model": "step-time",
                "default_stack": self.default_stack,
                "calibrated_against": "all measured rows, each under its own stack",
                "flops": {
                    "params": self.flops.params,
                    "multipliers": {
                        "full": self.flops.full,
                        "full_recompute": self.flops.full_recompute,
                        "lora": self.flops.lora,
                        "lora_recompute": self.flops.lora_recompute,
                    },
                    "adapter_flops": self.flops.adapter_flops,
                    "attention": self.flops.attention,
                },
                "step": self.step_params.describe() if self.step_params is not None else None,
                "memory": {k: getattr(self.memory, k) for k in MemoryKnobs.__slots__},
                "peak_tflops_overrides": dict(self.peak_tflops),
            }
        return {
            "name": self.name,
            "title": self.title,
            "description": " ".join(self.description.split()),
            "fitted": self.fitted,
            "calibrated_against": list(self.stacks) or "all measured rows (not fitted)",
            "flops": {
                "params": self.flops.params,
                "multipliers": {
                    "full": self.flops.full,
                    "full_recompute": self.flops.full_recompute,
                    "lora": self.flops.lora,
                    "lora_recompute": self.flops.lora_recompute,
                },
                "adapter_flops": self.flops.adapter_flops,
                "attention": self.flops.attention,
            },
            "efficiency": {a: {m: round(self.efficiency(a, m), 4) for m in ("full", "lora", "qlora")} for a in archs}
            | {"other": {m: round(self.efficiency("?", m), 4) for m in ("full", "lora", "qlora")}},
            "efficiency_source": dict(self.efficiency.source),
            "memory": {k: getattr(self.memory, k) for k in MemoryKnobs.__slots__},
            "multi_gpu_efficiency": dict(self.multi_gpu),
            "peak_tflops_overrides": dict(self.peak_tflops),
        }


@dataclass(frozen=True, slots=True)
class Priors:
    reference_architecture: str
    architecture: dict[str, Prior]
    method: dict[str, Prior]

    def arch_log(self, arch: str) -> float:
        prior = self.architecture.get(arch, self.architecture["default"])
        return math.log(prior.factor)


@cache
def _raw() -> dict[str, Any]:
    with DEFAULT_FILE.open("rb") as fh:
        return tomllib.load(fh)


@cache
def priors() -> Priors:
    raw = _raw()["efficiency_priors"]
    return Priors(
        reference_architecture=raw["reference_architecture"],
        architecture={k: Prior(float(v["factor"]), v["why"]) for k, v in raw["architecture"].items()},
        method={k: Prior(float(v["factor"]), v["why"]) for k, v in raw["method"].items()},
    )


def default_name() -> str:
    return str(_raw()["default"])


def set_names() -> list[str]:
    return list(_raw()["sets"])


def unfitted(name: str) -> AssumptionSet:
    """The set as written in the TOML; a step-time set still lacks its fitted step parameters here."""
    sets = _raw()["sets"]
    if name not in sets:
        raise UnknownAssumptions(name, list(sets))
    raw = sets[name]
    default_stack = raw.get("default_stack")
    if default_stack is not None:
        return AssumptionSet(
            name=name,
            title=raw["title"],
            description=raw["description"].strip(),
            stacks=(),
            flops=FlopsKnobs(**dict(raw["flops"])),
            memory=get_stack(default_stack).memory,
            efficiency=EfficiencyModel.constant(1.0),
            fitted=True,
            peak_tflops={},
            multi_gpu={"default": 1.0},
            default_stack=default_stack,
        )
    eff = raw["efficiency"]
    if "constant" not in eff:  # the per-set efficiency fit is retired: step-time sets fit the step model
        raise ValueError(f"assumption set {name!r}: [efficiency] needs a constant")
    efficiency = EfficiencyModel.constant(float(eff["constant"]))
    flops = dict(raw["flops"])
    return AssumptionSet(
        name=name,
        title=raw["title"],
        description=raw["description"].strip(),
        stacks=tuple(raw.get("stacks", ())),
        flops=FlopsKnobs(**flops),
        memory=MemoryKnobs(**raw["memory"]),
        efficiency=efficiency,
        fitted=False,
        peak_tflops={k: float(v) for k, v in raw.get("peak_tflops", {}).items()},
        multi_gpu={k: float(v) for k, v in raw["multi_gpu"].items()},
    )


@cache
def get_assumptions(name: str | None = None) -> AssumptionSet:
    """The named set (default set when None); a step-time set with the step model's fitted parameters."""
    base = unfitted(name or default_name())
    if not base.step_model:
        return base
    return replace(base, step_params=fitted_params())


def all_assumptions() -> list[AssumptionSet]:
    return [get_assumptions(n) for n in set_names()]
