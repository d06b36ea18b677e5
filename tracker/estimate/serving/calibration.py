"""Fit the serving model to measured runs and say how far off it is on runs it has not seen.

Rows live in tracker/estimate/data/serving_calibration.toml, one publication per source. The fit
minimises the squared log error of aggregate output tokens/s (each publication weighted as the mean one:
`_source_weights`) over a handful of shared parameters (bandwidth share per memory class, decode and
prefill compute share, the engines' step, launch and all-reduce overheads, the links' all-reduce
latencies, the AMD shares: `FITTED`), never one per row, each pulled weakly towards a prior stated
without the rows (`PRIORS`, `PRIOR_WIDTH`). Leave-one-source-out: each source is predicted by a fit to
all the others, and the median absolute percentage error over those predictions is the figure quoted.
The band every estimate carries is the 5th-95th percentile of those held-out ratios (a 90 % band: a
source unlike every one fitted still lands inside it at least four times in five).

`python -m tracker.estimate.serving.calibration` prints the fit, the table and the band; the numbers
written in serving_model.toml are what it prints (a test checks they agree).
"""

from __future__ import annotations

import math
import re
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tracker.catalog.gpus import GpuSpec, get_catalog
from tracker.estimate.architectures import DATA_DIR, ModelArch, resolve_model
from tracker.estimate.serving.job import make_serving_job
from tracker.estimate.serving.model import PreparedServing, ServingEstimate, prepare_serving
from tracker.estimate.serving.params import MODEL_FILE, ServingParams, get_params, memory_class

CALIBRATION_FILE = DATA_DIR / "serving_calibration.toml"
# The band's percentiles of the held-out ratios. 10th-90th covered 79 % of rows held out one source at a
# time (the spread between sources is wider than within one); 5th-95th is what keeps >= 80 % inside.
BAND_QUANTILES = (0.05, 0.95)
# What the fit may move, with the range it may move in (log-space search, clipped).
FITTED: dict[str, tuple[float, float]] = {
    "bandwidth_fraction.hbm": (0.2, 1.0),
    "bandwidth_fraction.gddr": (0.2, 1.0),
    "compute_fraction.decode": (0.05, 1.0),
    "compute_fraction.prefill": (0.05, 1.0),
    "engine.trt-llm.overhead_s": (1e-5, 0.05),
    "engine.trt-llm.per_sequence_s": (1e-8, 1e-3),
    "engine.vllm.overhead_s": (1e-5, 0.05),
    "engine.vllm.bandwidth": (0.3, 1.5),
    "engine.vllm.layer_us": (0.5, 200.0),
    "engine.vllm.eager_layer_us": (1.0, 2000.0),
    "engine.sglang.bandwidth": (0.3, 1.5),
    "engine.vllm.allreduce_us": (0.0 + 1.0, 500.0),
    "vendor_bandwidth.amd": (0.2, 1.5),
    "vendor_compute.amd": (0.1, 1.5),
    "comm.latency_us.nvlink": (1.0, 200.0),
    "comm.latency_us.infinity-fabric": (1.0, 500.0),
}
# Where every fit starts, and what a parameter keeps when no training row exercises it. Chosen without
# the calibration rows, so a leave-one-source-out fit never inherits a value fitted on the source it
# holds out (starting from serving_model.toml's values did: with the only GDDR source held out, its L40S
# rows were "predicted" with the GDDR share fitted on them).
PRIORS: dict[str, float] = {
    "bandwidth_fraction.hbm": 0.75,  # STREAM-like copy on HBM parts reaches ~75-90 % of peak
    "bandwidth_fraction.gddr": 0.70,  # GDDR6/6X boards lose more to refresh and row switching
    "compute_fraction.decode": 0.40,  # skinny decode GEMMs: well under the long-GEMM share
    "compute_fraction.prefill": 0.60,  # MAMF of long bf16/fp8 GEMMs (maximum achievable matmul FLOPS)
    "engine.trt-llm.overhead_s": 1e-3,  # C++ runtime: under vLLM's Python scheduler prior (1.5 ms)
    "engine.trt-llm.per_sequence_s": 3e-5,  # as the vLLM prior
    "engine.vllm.overhead_s": 1.5e-3,  # Python scheduler + sampling per step (vLLM V0 profiles: 1-2 ms)
    "engine.vllm.bandwidth": 1.0,  # same GEMV/attention kernel class as TensorRT-LLM's until rows say otherwise
    "engine.vllm.layer_us": 10.0,  # CUDA-graph replay gaps, ~10 kernels per block
    "engine.vllm.eager_layer_us": 150.0,  # each of ~12 kernels per block dispatched from Python, ~12 us each
    "engine.sglang.bandwidth": 1.0,  # FlashInfer kernels, as vLLM
    "engine.vllm.allreduce_us": 30.0,  # op dispatch + custom all-reduce sync per call, over TRT's fused one
    "vendor_compute.amd": 0.64,  # MAMF MI300X 51 % of peak vs H100 80 % (estimate-model.md section A)
    "vendor_bandwidth.amd": 0.8,  # ROCm decode kernels below CUDA's share of peak (MAMF 51 % vs 80 %, section A)
    "comm.latency_us.nvlink": 10.0,  # NVSwitch one-shot all-reduce (serving_model.toml [comm.latency_us])
    "comm.latency_us.infinity-fabric": 20.0,  # RCCL over xGMI, about twice NVSwitch
}
# How far a value may stray from its prior before the fit pays for it as much as for one row off by
# the same factor: a weak, explicit prior (a log-normal of this width) that keeps values only a few
# rows see (the AMD share and the Infinity Fabric latency meet on the same TP-8 rows) from trading off.
PRIOR_WIDTH = math.log(3.0)


@dataclass(frozen=True, slots=True)
class ServingRow:
    source: str
    engine: str
    model: ModelArch
    precision: str
    kv_precision: str
    prompt_tokens: int
    output_tokens: int
    concurrency: int | None  # None: as many as fit, up to max_batch
    max_batch: int
    gpu: GpuSpec
    gpus: int
    measured: float  # aggregate output tokens/s
    model_name: str = ""  # as the row names it (an inline config's key in [models])
    version: str = ""  # the engine's version the row ran
    eager: bool = False  # no CUDA graphs (enforce_eager, or vLLM V0 above max_seq_len_to_capture)
    # Requests that stop at their own EOS: `output_tokens` is then the mean output and this the cap the
    # longest reach (None: every request generates exactly `output_tokens`, as fixed-length benchmarks do).
    max_output_tokens: int | None = None

    def label(self) -> str:
        c = "max" if self.concurrency is None else str(self.concurrency)
        shape = f"{self.prompt_tokens}/{self.output_tokens}"
        return f"{self.model_name or self.model.id} {self.precision} {self.gpus}x{self.gpu.id} {shape} c={c}"

    @property
    def card_class(self) -> str:
        """What the maintainers' per-class bias check groups by: the GPU family."""
        return self.gpu.family


@cache
def _raw() -> dict[str, Any]:
    with CALIBRATION_FILE.open("rb") as fh:
        return tomllib.load(fh)


def sources() -> dict[str, dict[str, Any]]:
    return dict(_raw()["sources"])


def load_rows() -> list[ServingRow]:
    raw = _raw()
    models = {k: resolve_model(dict(v)) for k, v in raw.get("models", {}).items()}
    catalog = get_catalog()
    out = []
    for entry in raw["row"]:
        src = raw["sources"][entry["source"]]
        arch = models.get(entry["model"]) or resolve_model(entry["model"])
        for run in entry["runs"]:
            prompt, output, measured = int(run[0]), int(run[1]), float(run[2])
            conc = (
                int(run[3])
                if len(run) > 3
                else (None if entry.get("concurrency") == "max" else int(entry["concurrency"]))
            )
            out.append(
                ServingRow(
                    source=entry["source"],
                    engine=entry.get("engine", src["engine"]),
                    model=arch,
                    precision=entry["precision"],
                    kv_precision=entry["kv_precision"],
                    prompt_tokens=prompt,
                    output_tokens=output,
                    concurrency=conc,
                    max_batch=int(entry.get("max_batch", 2048)),
                    gpu=catalog.get(entry["gpu"]),
                    gpus=int(entry["gpus"]),
                    measured=measured,
                    model_name=entry["model"],
                    version=str(entry.get("version", src["version"])),
                    eager=bool(entry.get("eager", False)),
                    max_output_tokens=int(entry["max_output_tokens"]) if "max_output_tokens" in entry else None,
                )
            )
    return out


@cache
def _prepared(row: ServingRow) -> PreparedServing:
    """The row's job, prepared once (the fit re-places it under each parameter set it tries)."""
    job = make_serving_job(
        row.model,
        precision=row.precision,
        kv_precision=row.kv_precision,
        prompt_tokens=row.prompt_tokens,
        output_tokens=row.output_tokens,
        engine=row.engine,
        tensor_parallel=row.gpus,
    )
    return prepare_serving(job, get_params(), eager=row.eager, max_num_seqs=row.max_batch)


def predict(row: ServingRow, params: ServingParams) -> float:
    """The model's aggregate output tokens/s for the row's configuration: the benchmark's TP over all its
    GPUs; "max" rows queue `max_batch` requests and run as many as the KV cache holds."""
    prepared = replace(_prepared(row), params=params, _cache={})
    conc = row.concurrency if row.concurrency is not None else row.max_batch
    est = prepared.on(row.gpu, row.gpus, concurrency=conc)
    if row.max_output_tokens is None or row.max_output_tokens <= row.output_tokens:
        return est.tokens_per_second
    return _thinning(prepared, est, conc, row.output_tokens, row.max_output_tokens)


# Output lengths of requests that stop at their own EOS, spread evenly from 2 x mean - cap up to the cap
# (uniform: the mean is the only other figure such sources give), in an order that does not follow the
# length (the golden-ratio sequence): requests past the KV cache's room start in no particular order.
def _eos_lengths(n: int, mean: int, cap: int) -> list[float]:
    low = max(1.0, 2.0 * mean - cap)
    high = 2.0 * mean - low
    lengths = [low + (high - low) * (i + 0.5) / n for i in range(n)]
    order = sorted(range(n), key=lambda i: (i * 0.6180339887498949) % 1.0)
    return [lengths[i] for i in order]


def _thinning(prepared: PreparedServing, est: ServingEstimate, users: int, mean: int, cap: int) -> float:
    """Aggregate output tokens/s of `users` requests sent at once that end at their own EOS: the batch
    thins as they finish, so the run lasts as long as its longest request while the step's fixed costs
    (the weights' read, launches) are paid for fewer and fewer sequences. Requests past what the KV cache
    holds wait and start as others finish (each start pays its prompt in the step it joins)."""
    lay, cap_running = est.layout, max(1, est.batch_per_replica)
    # Replicas split the users evenly; each runs the same process, so one replica's share gives the rate.
    share = max(1, math.ceil(users / lay.replicas))
    lengths = _eos_lengths(share, mean, cap)
    queue = lengths[::-1]  # popped from the end: the first sent start first
    running = [queue.pop() for _ in range(min(cap_running, len(queue)))]
    steps: dict[int, float] = {}
    elapsed = len(running) * est.prefill_in_cycle_seconds
    while running:
        b = len(running)
        if b not in steps:
            steps[b] = sum(prepared.step_terms(est.gpu, lay, b).values())
        advance = min(running)
        elapsed += advance * steps[b]
        running = [r - advance for r in running if r - advance > 1e-9]
        while queue and len(running) < cap_running:
            running.append(queue.pop())
            elapsed += est.prefill_in_cycle_seconds
    return float(sum(lengths) * lay.replicas / elapsed) if elapsed > 0 else est.tokens_per_second


def _log_errors(rows: Sequence[ServingRow], params: ServingParams) -> np.ndarray:
    return np.array([math.log(predict(r, params) / r.measured) for r in rows])


def fit(rows: Sequence[ServingRow], base: ServingParams | None = None) -> ServingParams:
    """Parameters minimising the squared log error over `rows` plus the prior's pull (`PRIOR_WIDTH`),
    searched from `PRIORS` by Levenberg-Marquardt with a finite-difference Jacobian in log space. A
    parameter no row exercises (no GDDR row, no AMD row) keeps its prior: it is left out of the search."""
    base = (base or get_params()).with_values(PRIORS)
    used = [k for k in FITTED if _exercised(k, rows)]
    if not used:
        return base
    bounds = np.log(np.array([FITTED[k] for k in used]))
    prior = np.log(np.array([PRIORS[k] for k in used]))

    def params_at(x: np.ndarray) -> ServingParams:
        clipped = np.clip(x, bounds[:, 0], bounds[:, 1])
        return base.with_values({k: float(math.exp(v)) for k, v in zip(used, clipped, strict=True)})

    weights = _source_weights(rows)

    def residuals(x: np.ndarray) -> np.ndarray:
        # Past a bound the clipped error is flat, and a search that wanders there never comes back: a
        # penalty on the excess, beside the prior's pull.
        excess = x - np.clip(x, bounds[:, 0], bounds[:, 1])
        errors = weights * _log_errors(rows, params_at(x))
        return np.concatenate([errors, (x - prior) / PRIOR_WIDTH, 3.0 * excess])

    x0 = np.clip(prior, bounds[:, 0], bounds[:, 1])
    return params_at(np.clip(_levenberg_marquardt(residuals, x0), bounds[:, 0], bounds[:, 1]))


def _source_weights(rows: Sequence[ServingRow]) -> np.ndarray:
    """Each row's weight on its squared error: every publication counts as much as the mean one, however
    many runs it has (one vendor's 60-run sweep must not outvote four smaller sources measuring the same
    card). Scaled so the weights' squares sum to the row count: the prior's pull keeps its meaning."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.source] = counts.get(r.source, 0) + 1
    mean = len(rows) / len(counts) if counts else 1.0
    weights: np.ndarray = np.sqrt(np.array([mean / counts[r.source] for r in rows]))
    return weights


def _levenberg_marquardt(f: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, *, iters: int = 60) -> np.ndarray:
    """Minimise |f(x)|^2 (numpy only: the project carries no scipy). The loss is kinked where decode
    turns compute-bound, so a step that does not lower it is refused and the damping raised instead."""
    x, r = x0.copy(), f(x0)
    cost, lam, h = float(r @ r), 1e-2, 1e-4
    for _ in range(iters):
        jac = np.empty((len(r), len(x)))
        for i in range(len(x)):
            dx = np.zeros_like(x)
            dx[i] = h
            jac[:, i] = (f(x + dx) - r) / h
        a, g = jac.T @ jac, jac.T @ r
        gain, moved = 0.0, 0.0
        while lam < 1e8:
            step = np.linalg.solve(a + lam * (np.diag(np.diag(a)) + 1e-9 * np.eye(len(x))), -g)
            rn = f(x + step)
            cn = float(rn @ rn)
            if cn < cost:
                gain, moved = cost - cn, float(np.max(np.abs(step)))
                x, r, cost, lam = x + step, rn, cn, max(lam / 3.0, 1e-7)
                break
            lam *= 4.0
        if gain < 1e-9 or moved < 1e-6:
            break
    return x


def _exercised(key: str, rows: Sequence[ServingRow]) -> bool:
    parts = key.split(".")
    if parts[0] == "bandwidth_fraction":
        return any(memory_class(r.gpu) == parts[1] for r in rows)
    if parts[0] == "engine" and parts[2] == "eager_layer_us":
        return any(r.engine == parts[1] and r.eager for r in rows)
    if parts[0] == "engine" and parts[2] == "layer_us":
        return any(r.engine == parts[1] and not r.eager for r in rows)
    if parts[0] == "engine":
        return any(r.engine == parts[1] for r in rows)
    if parts[0] in ("vendor_bandwidth", "vendor_compute"):
        return any(r.gpu.vendor == parts[1] for r in rows)
    if parts[0] == "engine" and parts[2] == "allreduce_us":
        return any(r.engine == parts[1] and r.gpus > 1 for r in rows)
    if parts[0] == "comm":
        return any(r.gpu.interconnect == parts[2] and r.gpus > 1 for r in rows)
    return True


@dataclass(frozen=True, slots=True)
class ServingReport:
    params: ServingParams  # fitted on every row
    rows: list[ServingRow]
    in_sample: list[float]  # predicted tokens/s, full fit
    held_out: list[float]  # predicted tokens/s by the fit that did not see the row's source

    @property
    def loso_ape(self) -> list[float]:
        return [abs(p / r.measured - 1.0) for p, r in zip(self.held_out, self.rows, strict=True)]

    @property
    def loso_mdape(self) -> float:
        return float(np.median(self.loso_ape))

    @property
    def in_sample_mdape(self) -> float:
        return float(np.median([abs(p / r.measured - 1.0) for p, r in zip(self.in_sample, self.rows, strict=True)]))

    def band(self) -> tuple[float, float]:
        """5th and 95th percentile of measured / held-out prediction (BAND_QUANTILES)."""
        ratios = [r.measured / p for p, r in zip(self.held_out, self.rows, strict=True)]
        low, high = BAND_QUANTILES
        return float(np.quantile(ratios, low)), float(np.quantile(ratios, high))

    def by_group(self, key: Callable[[ServingRow], str]) -> dict[str, tuple[int, float, float]]:
        """Held-out error by group (card class, engine, engine version): (rows, MdAPE, median signed
        error), the figures the issue's bias check reads."""
        groups: dict[str, list[float]] = {}
        for held, r in zip(self.held_out, self.rows, strict=True):
            groups.setdefault(key(r), []).append(held / r.measured - 1.0)
        return {k: (len(v), float(np.median(np.abs(v))), float(np.median(v))) for k, v in sorted(groups.items())}

    def by_source(self) -> dict[str, float]:
        out: dict[str, list[float]] = {}
        for ape, r in zip(self.loso_ape, self.rows, strict=True):
            out.setdefault(r.source, []).append(ape)
        return {k: float(np.median(v)) for k, v in out.items()}


def calibrate(rows: Sequence[ServingRow] | None = None) -> ServingReport:
    rows = list(rows) if rows is not None else load_rows()
    full = fit(rows)
    held: dict[int, float] = {}
    for source in sorted({r.source for r in rows}):
        train = [r for r in rows if r.source != source]
        params = fit(train)
        for i, r in enumerate(rows):
            if r.source == source:
                held[i] = predict(r, params)
    return ServingReport(
        params=full, rows=rows, in_sample=[predict(r, full) for r in rows], held_out=[held[i] for i in range(len(rows))]
    )


def ttft_errors(params: ServingParams | None = None) -> list[tuple[str, float, float]]:
    """(label, measured s, predicted s) for the batch-1 time-to-first-token rows: a check of the prefill
    term the fit never sees."""
    raw = _raw()
    models = {k: resolve_model(dict(v)) for k, v in raw.get("models", {}).items()}
    params = params or get_params()
    out = []
    for entry in raw.get("ttft", []):
        arch = models.get(entry["model"]) or resolve_model(entry["model"])
        engine = raw["sources"][entry["source"]]["engine"]
        gpu = get_catalog().get(entry["gpu"])
        for prompt, ms in entry["runs"]:
            job = make_serving_job(
                arch,
                precision=entry["precision"],
                prompt_tokens=int(prompt),
                output_tokens=1,
                concurrency=1,
                engine=engine,
                tensor_parallel=int(entry["gpus"]),
            )
            est = prepare_serving(job, params).on(gpu, int(entry["gpus"]))
            out.append(
                (f"{arch.id} {entry['precision']} {entry['gpus']}x{gpu.id} {prompt}", ms / 1e3, est.prefill_seconds)
            )
    return out


def write_model(report: ServingReport, path: Path = MODEL_FILE) -> None:
    """Write the fitted values and the band into serving_model.toml in place, keeping its comments: each
    fitted key names its table and entry (`engine.vllm.overhead_s` is `overhead_s` in [engine.vllm])."""
    text = path.read_text()
    values = report.params.values()
    for key in FITTED:
        table, entry = key.rsplit(".", 1)
        text = _set_value(text, table, entry, f"{{ value = {values[key]:.6g},", inline=True)
    low, high = report.band()
    for entry, value in (("low", f"{low:.3f}"), ("high", f"{high:.3f}"), ("rows", str(len(report.rows)))):
        text = _set_value(text, "band", entry, value, inline=False)
    path.write_text(text)


def _set_value(text: str, table: str, entry: str, value: str, *, inline: bool) -> str:
    start = text.index(f"\n[{table}]\n")
    end = text.find("\n[", start + 1)
    end = len(text) if end < 0 else end
    section = text[start:end]
    tail = r"\{ value = [^,]+," if inline else r"[^\n]+"
    pattern = rf"(\n{re.escape(entry)} = )" + tail
    new, n = re.subn(pattern, lambda m: m.group(1) + value, section, count=1)
    if n != 1:
        raise KeyError(f"{table}.{entry} not in {MODEL_FILE.name}")
    return text[:start] + new + text[end:]


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - a report for people
    args = list(sys.argv[1:] if argv is None else argv)
    report = calibrate()
    values = report.params.values()
    print("fitted:", {k: round(values[k], 6) for k in FITTED})
    print(f"in-sample MdAPE {report.in_sample_mdape:.1%}; leave-one-source-out MdAPE {report.loso_mdape:.1%}")
    print("by source:", {k: f"{v:.1%}" for k, v in report.by_source().items()})
    for name, key in (
        ("card class", lambda r: r.card_class),
        ("engine", lambda r: r.engine),
        ("engine version", lambda r: f"{r.engine} {r.version}"),
    ):
        print(
            f"by {name} (rows, LOSO MdAPE, median signed):",
            {k: f"{n} {m:.1%} {b:+.1%}" for k, (n, m, b) in report.by_group(key).items()},
        )
    low, high = report.band()
    inside = sum(low <= r.measured / h <= high for r, h in zip(report.rows, report.held_out, strict=True))
    print(f"band: low {low:.3f} high {high:.3f} over {len(report.rows)} rows ({inside} inside)")
    ttft = ttft_errors(report.params)
    ttft_ape = float(np.median([abs(p / m - 1.0) for _, m, p in ttft]))
    print(f"TTFT (batch 1, not fitted) MdAPE {ttft_ape:.1%} over {len(ttft)} rows")
    for r, p, h in zip(report.rows, report.in_sample, report.held_out, strict=True):
        print(
            f"{r.source:28s} {r.label():60s} measured {r.measured:9.1f} fit {p:9.1f} loso {h:9.1f} "
            f"({h / r.measured - 1:+.0%})"
        )
    if "--write" in args:
        write_model(report)
        print(f"wrote {MODEL_FILE}")


if __name__ == "__main__":  # pragma: no cover
    main()
