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
# Engine values the fit may move and `values()` names (`engine.vllm.layer_us`).
ENGINE_VALUES = ("overhead_s", "per_sequence_s", "bandwidth", "layer_us", "eager_layer_us", "allreduce_us")
GDDR_FORM_FACTORS = frozenset({"consumer", "PCIe"})
# PCIe boards that carry HBM: they stream memory like their SXM siblings.
HBM_PCIE_FAMILIES = frozenset({"A100", "A30", "H100", "H200", "H20", "V100", "V100FHHL", "P100"})


@dataclass(frozen=True, slots=True)
class EngineParams:
    overhead_s: float  # scheduler, sampling launch, Python: once per decode step
    per_sequence_s: float  # block tables, sampling, detokenise: per running sequence per step
    bandwidth: float  # how close the engine's GEMV/attention kernels get to the achievable bandwidth
    memory_utilization: float
    max_num_seqs: int
    chunk_tokens: int
    layer_us: float = 0.0  # kernel launches per layer per step, CUDA graphs captured (graph replay gaps)
    eager_layer_us: float = 0.0  # the same in eager mode: every kernel launched from Python
    chunked_prefill: bool = False  # prompts ride in decode steps (their weights are read once, by the step)
    allreduce_us: float = 0.0  # the engine's own cost per all-reduce, beside the link's latency


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
    vendor_bandwidth: tuple[tuple[str, float], ...] = ()  # GPU vendor -> multiplier on the bandwidth share
    vendor_compute: tuple[tuple[str, float], ...] = ()  # GPU vendor -> multiplier on the compute shares
    fitted: tuple[str, ...] = ()  # names of the values the fit sets
    source: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def bandwidth(self, memory_class: str) -> float:
        return dict(self.bandwidth_fraction)[memory_class]

    def vendor(self, vendor: str) -> float:
        """The software stack's share of the bandwidth a vendor's parts reach relative to NVIDIA's (ROCm
        kernels and RCCL are younger than CUDA's); 1 for a vendor the file does not name."""
        return dict(self.vendor_bandwidth).get(vendor, 1.0)

    def vendor_flops(self, vendor: str) -> float:
        """The same for the share of the tensor peak the GEMMs reach."""
        return dict(self.vendor_compute).get(vendor, 1.0)

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
            out |= {f"engine.{name}.{k}": float(getattr(e, k)) for k in ENGINE_VALUES}
        out |= {f"vendor_bandwidth.{k}": v for k, v in self.vendor_bandwidth}
        out |= {f"vendor_compute.{k}": v for k, v in self.vendor_compute}
        out |= {f"comm.latency_us.{k}": v for k, v in self.latency_us}
        return out

    def with_values(self, values: dict[str, float]) -> ServingParams:
        """A copy with the named values replaced (names as in `values()`)."""
        bw = dict(self.bandwidth_fraction)
        engines = {k: v for k, v in self.engines}
        lat = dict(self.latency_us)
        vendors = dict(self.vendor_bandwidth)
        vendor_flops = dict(self.vendor_compute)
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
            elif parts[0] == "vendor_bandwidth":
                vendors[parts[1]] = value
            elif parts[0] == "vendor_compute":
                vendor_flops[parts[1]] = value
            else:
                raise KeyError(key)
        return replace(
            self,
            bandwidth_fraction=tuple(bw.items()),
            decode_compute_fraction=decode,
            prefill_compute_fraction=prefill,
            engines=tuple(engines.items()),
            latency_us=tuple(lat.items()),
            vendor_bandwidth=tuple(vendors.items()),
            vendor_compute=tuple(vendor_flops.items()),
        )

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
        for key in ENGINE_VALUES:
            note(f"engine.{name}.{key}", e[key])
        engines.append(
            (
                name,
                EngineParams(
                    overhead_s=_value(e["overhead_s"]),
                    per_sequence_s=_value(e["per_sequence_s"]),
                    bandwidth=_value(e["bandwidth"]),
                    memory_utilization=_value(e["memory_utilization"]),
                    max_num_seqs=int(_value(e["max_num_seqs"])),
                    chunk_tokens=int(_value(e["chunk_tokens"])),
                    layer_us=_value(e["layer_us"]),
                    eager_layer_us=_value(e["eager_layer_us"]),
                    chunked_prefill=bool(e["chunked_prefill"]["value"]),
                    allreduce_us=_value(e["allreduce_us"]),
                ),
            )
        )
    vendors: dict[str, list[tuple[str, float]]] = {"vendor_bandwidth": [], "vendor_compute": []}
    for table, out in vendors.items():
        for k, v in raw[table].items():
            out.append((k, _value(v)))
            note(f"{table}.{k}", v)
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
        vendor_bandwidth=tuple(vendors["vendor_bandwidth"]),
        vendor_compute=tuple(vendors["vendor_compute"]),
        fitted=tuple(fitted),
        source=tuple(source.items()),
    )
