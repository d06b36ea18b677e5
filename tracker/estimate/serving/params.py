"""The serving model's numbers (tracker/estimate/data/serving_model.toml): fitted values and priors.

`ServingParams` is immutable and hashable so an estimate can say which parameters made it and a
ranking cache can key on them; `with_values` gives a variant with some values replaced (what the
fit explores). The file says, for each value, whether it is fitted and why it has the value it has.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from tracker.catalog.gpus import GpuSpec
from tracker.estimate.architectures import DATA_DIR

MODEL_FILE = DATA_DIR / "serving_model.toml"
GDDR_FORM_FACTORS = frozenset({"consumer", "PCIe"})
# PCIe boards that carry HBM: they stream memory like their SXM siblings.
HBM_PCIE_FAMILIES = frozenset({"A100", "A30", "H100", "H200", "H20", "V100", "V100FHHL", "P100"})


@dataclass(frozen=True, slots=True)
class EngineParams:
    overhead_s: float
    per_sequence_s: float
    bandwidth: float
    memory_utilization: float
    max_num_seqs: int
    chunk_tokens: int


@dataclass(frozen=True, slots=True)
class ServingParams:
    name: str
    bandwidth_fraction: tuple[tuple[str, float], ...]  # memory class -> share of peak bandwidth
    decode_compute_fraction: float
    prefill_compute_fraction: float
    engines: tuple[tuple[str, EngineParams], ...]
    latency_us: tuple[tuple[str, float], ...]
    link_gb_s: tuple[tuple[str, float], ...]
    runtime_gb: float
    nccl_gb: float
    band: tuple[float, float]
    band_rows: int
    fitted: tuple[str, ...] = ()  # names of the values the fit sets
    source: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def bandwidth(self, memory_class: str) -> float:
        return dict(self.bandwidth_fraction)[memory_class]

    def engine(self, name: str) -> EngineParams:
        return dict(self.engines)[name]

    def latency_s(self, interconnect: str) -> float:
        table = dict(self.latency_us)
        return table.get(interconnect, table["default"]) * 1e-6

    def link(self, interconnect: str) -> float:
        table = dict(self.link_gb_s)
        return table.get(interconnect, table["default"]) * 1e9

    def values(self) -> dict[str, float]:
        """Every fitted value by its name in the file (`bandwidth_fraction.hbm`, `engine.vllm.overhead_s`)."""
        out = {f"bandwidth_fraction.{k}": v for k, v in self.bandwidth_fraction}
        out["compute_fraction.decode"] = self.decode_compute_fraction
        out["compute_fraction.prefill"] = self.prefill_compute_fraction
        for name, e in self.engines:
            out |= {f"engine.{name}.overhead_s": e.overhead_s, f"engine.{name}.per_sequence_s": e.per_sequence_s,
                    f"engine.{name}.bandwidth": e.bandwidth}  # fmt: skip
        out |= {f"comm.latency_us.{k}": v for k, v in self.latency_us}
        return out

    def with_values(self, values: dict[str, float]) -> ServingParams:
        """A copy with the named values replaced (names as in `values()`)."""
        bw = dict(self.bandwidth_fraction)
        engines = {k: v for k, v in self.engines}
        lat = dict(self.latency_us)
        decode, prefill = self.decode_compute_fraction, self.prefill_compute_fraction
        for key, value in values.items():
            parts = key.split(".")
            if parts[0] == "bandwidth_fraction":
                bw[parts[1]] = value
            elif key == "compute_fraction.decode":
                decode = value
            elif key == "compute_fraction.prefill":
                prefill = value
            elif parts[0] == "engine":
                change: dict[str, Any] = {parts[2]: value}
                engines[parts[1]] = replace(engines[parts[1]], **change)
            elif parts[:2] == ["comm", "latency_us"]:
                lat[parts[2]] = value
            else:
                raise KeyError(key)
        return replace(self, bandwidth_fraction=tuple(bw.items()), decode_compute_fraction=decode,
                       prefill_compute_fraction=prefill, engines=tuple(engines.items()),
                       latency_us=tuple(lat.items()))  # fmt: skip

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "values": {k: round(v, 6) for k, v in self.values().items()},
            "fitted": list(self.fitted),
            "link_gb_s": dict(self.link_gb_s),
            "band": {"low": self.band[0], "high": self.band[1], "rows": self.band_rows},
            "source": dict(self.source),
        }


def memory_class(gpu: GpuSpec) -> str:
    """HBM (SXM/OAM/NVL/superchip parts and the HBM PCIe boards: A100, H100, A30, V100 ...) or GDDR."""
    if gpu.form_factor in GDDR_FORM_FACTORS and gpu.family not in HBM_PCIE_FAMILIES:
        return "gddr"
    return "hbm"


def _value(entry: Any) -> float:
    return float(entry["value"]) if isinstance(entry, dict) else float(entry)


@cache
def raw_file() -> dict[str, Any]:
    with MODEL_FILE.open("rb") as fh:
        return tomllib.load(fh)


@cache
def get_params() -> ServingParams:
    """The parameters as written in serving_model.toml (fitted values as last written by the fit)."""
    raw = raw_file()
    fitted: list[str] = []
    source: dict[str, str] = {}

    def note(key: str, entry: Any) -> None:
        if isinstance(entry, dict) and "why" in entry:
            source[key] = ("fit: " if entry.get("fit") else "prior: ") + str(entry["why"])
            if entry.get("fit"):
                fitted.append(key)

    bw = []
    for k, v in raw["bandwidth_fraction"].items():
        bw.append((k, _value(v)))
        note(f"bandwidth_fraction.{k}", v)
    cf = raw["compute_fraction"]
    note("compute_fraction.decode", cf["decode"])
    note("compute_fraction.prefill", cf["prefill"])
    engines = []
    for name, e in raw["engine"].items():
        for key in ("overhead_s", "per_sequence_s", "bandwidth"):
            note(f"engine.{name}.{key}", e[key])
        engines.append((name, EngineParams(
            overhead_s=_value(e["overhead_s"]), per_sequence_s=_value(e["per_sequence_s"]),
            bandwidth=_value(e["bandwidth"]), memory_utilization=_value(e["memory_utilization"]),
            max_num_seqs=int(_value(e["max_num_seqs"])), chunk_tokens=int(_value(e["chunk_tokens"])),
        )))  # fmt: skip
    lat = []
    for k, v in raw["comm"]["latency_us"].items():
        lat.append((k, _value(v)))
        note(f"comm.latency_us.{k}", v)
    mem = raw["memory"]
    band = raw["band"]
    return ServingParams(
        name="serving",
        bandwidth_fraction=tuple(bw),
        decode_compute_fraction=_value(cf["decode"]),
        prefill_compute_fraction=_value(cf["prefill"]),
        engines=tuple(engines),
        latency_us=tuple(lat),
        link_gb_s=tuple((k, float(v)) for k, v in raw["comm"]["link_gb_s"].items()),
        runtime_gb=_value(mem["runtime_gb"]),
        nccl_gb=_value(mem["nccl_gb"]),
        band=(float(band["low"]), float(band["high"])),
        band_rows=int(band["rows"]),
        fitted=tuple(fitted),
        source=tuple(source.items()),
    )
