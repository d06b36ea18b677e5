"""The workload mix: what a cluster runs in a month, as a file (YAML or JSON) and as pydantic models.

A mix names its workloads; each has a kind, a job in the one job schema (`tracker.estimate.JobInput`),
a monthly volume and constraints. The models are the schema: `plan_schema()` publishes them as JSON
Schema (`gpu-tracker plan --schema`), the API's /v1/plan body is the same model, and `load_mix` is the
one place a file becomes a mix, so a bad file gets the same message, naming the workload and the field,
in the CLI and the API.

The job of every workload is validated here against JobInput, as kind fine-tune (fine-tune, pretrain)
or kind inference (inference, batch-inference); the `kind` in the job may be left out. The load of a
serving job is the workload's volume, never the job's own tokens_per_month / requests_per_second.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from providers.contract import Pricing
from tracker.estimate import EstimateError, JobInput, parse_tokens
from tracker.market.fabric import INTERCONNECT_HELP, MAX_NODES, MIN_NODES_HELP, Interconnect
from tracker.market.rank import default_pricing
from tracker.plan.serving import validate_serving_job

Kind = Literal["fine-tune", "pretrain", "inference", "batch-inference"]
KINDS: tuple[str, ...] = ("fine-tune", "pretrain", "inference", "batch-inference")
TRAINING_KINDS = frozenset({"fine-tune", "pretrain"})
SERVING_KINDS = frozenset({"inference", "batch-inference"})
# The load of a serving job is the workload's volume, so the job must not state it a second time.
LOAD_FIELDS = ("tokens_per_month", "requests_per_second")
# An average month (365.25 × 24 / 12): what a node held for the month is billed for.
HOURS_PER_MONTH = 730.5
# Data-centre power usage effectiveness: cooling and power delivery on top of the cards' TDP. 1.3 is
# a typical figure for an air-cooled colocation hall; the host (CPUs, NICs, fans) is folded in too.
DEFAULT_OVERHEAD = 1.3
MAX_WORKLOADS = 200
MAX_SOURCE_CHARS = 1_000_000
# Volumes past any real cluster: beyond them a month's cost overflows the money rule's Decimal context
# (a 500). Served tokens share the serving job's own cap; derived training runs share runs_per_month's.
MAX_TOKENS_PER_MONTH = 1e18
MAX_RUNS_PER_MONTH = 1e6


class MixError(ValueError):
    """A bad mix: `field` is its path (``workloads[1].volume.runs_per_month``), `workload` its name."""

    def __init__(self, message: str, field: str | None = None, workload: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.workload = workload


def _amount(value: object, field: str) -> float:
    """A positive count up to MAX_TOKENS_PER_MONTH, written as a number or with a K/M/B/T suffix ("5B")."""
    try:
        number = parse_tokens(value)  # type: ignore[arg-type]  # anything else is refused just below
    except EstimateError:
        raise ValueError(f"cannot read {value!r} as an amount (examples: 22.5M, 5B, 1200)") from None
    if not (number > 0 and math.isfinite(number)):
        raise ValueError(f"{field} must be a positive finite number, got {value!r}")
    if number > MAX_TOKENS_PER_MONTH:
        raise ValueError(f"{field} must be at most {MAX_TOKENS_PER_MONTH:.0e}, got {value!r}")
    return number


class Volume(BaseModel):
    """How much of the workload runs in a month: exactly one of the four amounts.

    Training: `runs_per_month`, or `training_tokens_per_month` (divided by the job's tokens per run).
    Serving: `tokens_per_month` (generated tokens), or `requests_per_second` (× the job's output tokens).
    `peak_to_average` sizes the fleet for the busiest hour: peak demand is average × this ratio.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    runs_per_month: float | None = Field(None, gt=0, le=MAX_RUNS_PER_MONTH, description="Training runs per month.")
    training_tokens_per_month: float | str | None = Field(
        None, description="Training tokens per month (e.g. 2B); runs = this ÷ the job's tokens."
    )
    tokens_per_month: float | str | None = Field(None, description="Served (generated) tokens per month, e.g. 5B.")
    requests_per_second: float | None = Field(None, gt=0, le=1e7, description="Average requests per second.")
    peak_to_average: float = Field(1.0, ge=1, le=1000, description="Peak demand ÷ average demand (≥ 1).")

    @field_validator("training_tokens_per_month", "tokens_per_month")
    @classmethod
    def _tokens(cls, value: float | str | None, info: ValidationInfo) -> float | None:
        return None if value is None else _amount(value, info.field_name or "amount")

    @model_validator(mode="after")
    def _exactly_one(self) -> Volume:
        given = [
            n
            for n in ("runs_per_month", "training_tokens_per_month", "tokens_per_month", "requests_per_second")
            if getattr(self, n) is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of runs_per_month, training_tokens_per_month, tokens_per_month, requests_per_second"
                + (f" (got {', '.join(given)})" if given else "")
            )
        return self


class Constraints(BaseModel):
    """What a feasible placement must satisfy. Nothing here is ever relaxed by the planner."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deadline_hours: float | None = Field(None, gt=0, le=1e6, description="Longest acceptable wall time per run.")
    min_user_tokens_per_second: float | None = Field(
        None, gt=0, le=1e6, description="Serving: slowest acceptable generation speed per user."
    )
    max_ttft_s: float | None = Field(
        None, gt=0, le=3600, description="Serving: longest acceptable time to first token."
    )
    pricing: list[Pricing] | None = Field(
        None,
        max_length=3,
        description=(
            "Allowed pricing types (default: the ranking's, on_demand and spot for training, whose expected "
            "interruptions are priced, on_demand for serving)."
        ),
    )
    providers: list[str] | None = Field(None, max_length=100, description="Only these providers.")
    regions: list[str] | None = Field(None, max_length=100, description="Only these regions (exact, or a prefix: us).")
    available_now: bool = Field(False, description="Only offers the provider says are available now.")
    min_gpus: int | None = Field(None, gt=0, le=1024, description="Fewest GPUs per node.")
    max_gpus: int | None = Field(None, gt=0, le=1024, description="Most GPUs per node.")
    include_reference: bool = Field(True, description="Count static published rate sheets as offers.")
    include_stale: bool = Field(
        False, description="Count rate sheets past TRACKER_SHEET_MAX_AGE_DAYS too (left out, as in the ranking)."
    )
    interconnect: Interconnect | None = Field(None, description=INTERCONNECT_HELP)
    min_nodes: int | None = Field(None, ge=1, le=MAX_NODES, description=MIN_NODES_HELP)

    @model_validator(mode="after")
    def _range(self) -> Constraints:
        if self.min_gpus is not None and self.max_gpus is not None and self.min_gpus > self.max_gpus:
            raise ValueError("min_gpus must not exceed max_gpus")
        return self

    def allowed_pricing(self, *, serving: bool) -> list[str]:
        """The pricing types named, else the ranking's default (tracker.market.rank.default_pricing): a run
        counts on-demand and spot (its whole cost prices the interruptions), serving on-demand."""
        return [p.value for p in self.pricing] if self.pricing else list(default_pricing(serving))


class Workload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(..., min_length=1, max_length=100, description="Unique within the mix.")
    kind: Kind = Field(..., description="fine-tune | pretrain | inference | batch-inference")
    job: dict[str, Any] = Field(
        ..., description="The job in the one job schema (tracker.estimate.JobInput; serving fields for serving kinds)."
    )
    volume: Volume
    constraints: Constraints = Field(default_factory=Constraints)

    @field_validator("job")
    @classmethod
    def _job(cls, job: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        # Validated here, as a field, so an error in the job is located under `job` (kind comes first).
        kind = info.data.get("kind")
        if kind is None:
            return job
        given = job.get("kind")
        if given is not None and given != _job_kind(kind):
            raise ValueError(f"the job's kind {given!r} contradicts the workload's kind {kind!r}")
        for name in LOAD_FIELDS:
            if job.get(name) is not None:
                raise ValueError(f"{name} is the workload's volume: give it under volume, not in the job")
        JobInput.model_validate({**job, "kind": _job_kind(kind)})
        return job

    @model_validator(mode="after")
    def _volume_for_kind(self) -> Workload:
        if self.kind in TRAINING_KINDS:
            if self.volume.tokens_per_month is not None or self.volume.requests_per_second is not None:
                raise ValueError(f"a {self.kind} workload's volume is runs_per_month or training_tokens_per_month")
        elif self.volume.runs_per_month is not None or self.volume.training_tokens_per_month is not None:
            raise ValueError(f"an {self.kind} workload's volume is tokens_per_month or requests_per_second")
        return self

    def job_input(self) -> JobInput:
        """The job in the one job schema, of the kind the workload implies (fine-tune or inference)."""
        return JobInput.model_validate({**self.job, "kind": _job_kind(self.kind)})


def _job_kind(kind: str) -> str:
    """The one job schema knows two kinds: training (fine-tune, pretrain) and serving (inference, batch)."""
    return "fine-tune" if kind in TRAINING_KINDS else "inference"


class WorkloadMix(BaseModel):
    """A month of work for one cluster."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workloads: list[Workload] = Field(..., min_length=1, max_length=MAX_WORKLOADS)
    power_budget_kw: float | None = Field(None, gt=0, le=1e7, description="Facility cap on the fleet's power, kW.")
    overhead_factor: float = Field(
        DEFAULT_OVERHEAD, ge=1, le=5, description="PUE-like multiplier on the cards' TDP (cooling, host, delivery)."
    )

    @model_validator(mode="after")
    def _unique_names(self) -> WorkloadMix:
        seen: set[str] = set()
        for w in self.workloads:
            if w.name in seen:
                raise ValueError(f"workload name {w.name!r} is used twice; names must be unique")
            seen.add(w.name)
        return self


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _error(exc: ValidationError, raw: object, prefix: tuple[int | str, ...] = ()) -> MixError:
    """The first error of `exc` as one line naming the workload (by name where it has one) and the field."""
    err = exc.errors(include_url=False)[0]
    loc = prefix + tuple(err["loc"])
    name = None
    if len(loc) >= 2 and loc[0] == "workloads" and isinstance(loc[1], int) and isinstance(raw, dict):
        items = raw.get("workloads")
        if isinstance(items, list) and loc[1] < len(items) and isinstance(items[loc[1]], dict):
            candidate = items[loc[1]].get("name")
            name = candidate if isinstance(candidate, str) else None
    field = _path(loc) or "mix"
    message = str(err["msg"]).removeprefix("Value error, ")
    where = f"workload {name!r} ({field})" if name else field
    return MixError(f"{where}: {message}", field=field, workload=name)


def validate_mix(raw: object) -> WorkloadMix:
    """A mix from parsed YAML/JSON; raises MixError naming the workload and field."""
    if not isinstance(raw, dict):
        raise MixError("a mix is a mapping with a `workloads` list", field="mix")
    try:
        mix = WorkloadMix.model_validate(raw)
    except ValidationError as exc:
        raise _error(exc, raw) from None
    # Semantic checks of the job (model exists, rank fits the model, ...): the estimate's own validation.
    for i, w in enumerate(mix.workloads):
        try:
            if w.kind in TRAINING_KINDS:
                spec = w.job_input().spec()
                tokens = w.volume.training_tokens_per_month
                if tokens is not None and float(tokens) / spec.tokens > MAX_RUNS_PER_MONTH:
                    field = f"workloads[{i}].volume.training_tokens_per_month"
                    raise MixError(
                        f"workload {w.name!r} ({field}): {float(tokens):.3g} tokens is "
                        f"{float(tokens) / spec.tokens:.3g} runs of {spec.tokens:.3g} tokens a month; "
                        f"at most {MAX_RUNS_PER_MONTH:.0e}",
                        field=field,
                        workload=w.name,
                    )
            else:
                validate_serving_job(w.job_input())
        except EstimateError as exc:
            field = f"workloads[{i}].job" + (f".{exc.field}" if exc.field else "")
            raise MixError(f"workload {w.name!r} ({field}): {exc.message}", field=field, workload=w.name) from None
    return mix


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are distinct: a repeated key would otherwise silently take the last value."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def parse_source(text: str, filename: str = "") -> object:
    """YAML or JSON text as plain data (JSON is YAML, but JSON first gives JSON's own error messages)."""
    if len(text) > MAX_SOURCE_CHARS:
        raise MixError(f"the mix is {len(text):,} characters; at most {MAX_SOURCE_CHARS:,}", field="mix")
    stripped = text.lstrip()
    if filename.endswith(".json") or stripped.startswith(("{", "[")):
        try:
            return json.loads(text, object_pairs_hook=_unique_keys)
        except _DuplicateKey as exc:
            raise MixError(f"duplicate key {exc.key!r} in one object; each key may appear once", field="mix") from None
        except RecursionError:  # "[[[[…": json's C scanner recurses per level, like YAML's parser below
            raise MixError("the mix nests too deeply", field="mix") from None
        except json.JSONDecodeError as exc:
            if filename.endswith(".json"):
                raise MixError(
                    f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", field="mix"
                ) from None
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information

    from tracker.plan.bounded_yaml import safe_load_bounded

    try:
        # Safe: a mix is data, a YAML tag must never construct Python objects; bounded: aliases are
        # charged for what they expand to while parsing, so an alias bomb is refused, never expanded.
        return safe_load_bounded(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise MixError(f"not valid YAML{where}: {problem}", field="mix") from None
    except RecursionError:
        raise MixError("the mix nests too deeply", field="mix") from None


def load_mix(text: str, filename: str = "") -> WorkloadMix:
    return validate_mix(parse_source(text, filename))


def plan_schema() -> dict[str, Any]:
    """The mix's JSON Schema, with the job schema (JobInput) it refers to."""
    schema = WorkloadMix.model_json_schema()
    job = JobInput.model_json_schema()
    defs = schema.setdefault("$defs", {})
    defs["JobInput"] = job
    props = defs["Workload"]["properties"]
    props["job"] = {
        "description": props["job"].get("description", ""),
        "anyOf": [{"$ref": "#/$defs/JobInput"}, {"type": "object", "description": "a serving job"}],
    }
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gpu-tracker workload mix"
    return schema


__all__ = [
    "DEFAULT_OVERHEAD",
    "HOURS_PER_MONTH",
    "KINDS",
    "SERVING_KINDS",
    "TRAINING_KINDS",
    "Constraints",
    "MixError",
    "Volume",
    "Workload",
    "WorkloadMix",
    "load_mix",
    "parse_source",
    "plan_schema",
    "validate_mix",
]
