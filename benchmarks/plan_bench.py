"""§7 Fleet plan: 20 workloads over the live 20,000-offer frame, in process (issue #17: ≤ 1 s).

Measured: `tracker.plan.planner.plan` on the cached LIVE frame (what POST /v1/plan does after parsing the
mix), with a power budget below the uncapped fleet so the capped search runs too. Anchor: ranking one job
over the same offers 20 times (`tracker.market.rank.rank`), the work of pricing each workload once; the
ratio says what the fleet, the single-card fleets and the power search add on top.
"""

from __future__ import annotations

from sqlalchemy import Engine

from benchmarks.common import Figure, Report, median_time
from tracker.clock import utcnow
from tracker.config import Settings
from tracker.estimate import make_job, prepare
from tracker.market.live import LIVE, fresh_mask
from tracker.market.rank import RankFilters, RankOptions, rank
from tracker.plan.mix import validate_mix
from tracker.plan.planner import PlanOptions, evaluate, plan
from tracker.plan.serving import serving_estimator
from tracker.storage.engine import session_scope

WORKLOADS = 20
TARGET_S = 1.0
# Training jobs of every size, and serving of small and large models: the seed's mix, repeated with variations.
_TRAINING = [
    ("llama-3.2-1b", "lora", "5M"),
    ("llama-3.1-8b", "qlora", "22.5M"),
    ("qwen2.5-7b", "lora", "40M"),
    ("mistral-7b", "full", "20M"),
    ("qwen2.5-14b", "qlora", "30M"),
    ("gemma-2-27b", "qlora", "15M"),
    ("qwen2.5-32b", "lora", "10M"),
    ("llama-3.1-70b", "qlora", "10M"),
    ("llama-3.1-70b", "full", "50M"),
    ("mixtral-8x7b", "qlora", "12M"),
    ("phi-3-mini", "full", "8M"),
    ("llama-3.2-3b", "lora", "6M"),
    ("qwen2.5-72b", "qlora", "9M"),
    ("gemma-2-9b", "lora", "18M"),
]
_SERVING = [
    ("llama-3.1-8b", "bf16", 16, "2B"),
    ("llama-3.1-70b", "fp8", 64, "5B"),
    ("qwen2.5-7b", "bf16", 32, "1B"),
    ("llama-3.2-3b", "bf16", 8, "500M"),
    ("qwen2.5-32b", "fp8", 32, "3B"),
    ("mistral-7b", "bf16", 16, "800M"),
]


def mix_document() -> dict[str, object]:
    workloads: list[dict[str, object]] = []
    for i, (model, method, tokens) in enumerate(_TRAINING):
        constraints: dict[str, object] = {"pricing": ["on_demand", "spot"]} if i % 3 == 0 else {}
        if i % 4 == 1:
            constraints["deadline_hours"] = 48
        workloads.append(
            {
                "name": f"train-{i}",
                "kind": "fine-tune" if i % 5 else "pretrain",
                "job": {"model": model, "method": method, "tokens": tokens},
                "volume": {"runs_per_month": 2 + i % 7, "peak_to_average": 1 + i % 3},
                "constraints": constraints,
            }
        )
    for i, (model, precision, users, monthly) in enumerate(_SERVING):
        workloads.append(
            {
                "name": f"serve-{i}",
                "kind": "inference" if i % 2 == 0 else "batch-inference",
                "job": {"model": model, "precision": precision, "concurrency": users},
                "volume": {"tokens_per_month": monthly, "peak_to_average": 2},
            }
        )
    assert len(workloads) == WORKLOADS
    return {"workloads": workloads}


def run(report: Report, backend: str, engine: Engine, repeat: int) -> None:
    settings = Settings(database_url=engine.url.render_as_string(hide_password=False))
    with session_scope(engine) as session:
        _, frame = LIVE.frame(engine, session)
    now = utcnow()
    fresh = fresh_mask(frame, now, settings)
    n = int(fresh.sum())
    mix = validate_mix(mix_document())
    serving = serving_estimator()
    first = plan(frame, fresh, mix, now, options=PlanOptions(), serving=serving)
    # A cap at 80 % of the uncapped fleet's power makes the capped search do real work.
    budget = (first["power"]["power_kw"] or 1.0) * 0.8
    options = PlanOptions(power_budget_kw=budget)
    result = plan(frame, fresh, mix, now, options=options, serving=serving)
    planned = sum(w["status"] == "ok" for w in result["workloads"])
    seconds = median_time(lambda: plan(frame, fresh, mix, now, options=options, serving=serving), repeat)

    prepared = prepare(make_job("llama-3.1-8b", "qlora", tokens="22.5M"), None)
    anchor_s = median_time(
        lambda: [rank(frame, fresh, prepared, RankFilters(), RankOptions(), now) for _ in range(WORKLOADS)],
        max(3, repeat // 4),
    )
    report.add(
        Figure(
            name=f"{backend} plan {WORKLOADS} workloads over {n:,} live offers (in process)",
            value=seconds * 1000,
            unit="ms",
            anchor=anchor_s * 1000,
            anchor_label=f"{WORKLOADS} rankings",
            anchor_unit="ms",
            ratio=seconds / anchor_s,
            ratio_label="x 20 rankings",
            target=f"<= {TARGET_S:g} s",
            ok=seconds <= TARGET_S,
            note=f"{planned} of {WORKLOADS} planned ({'with' if serving else 'without'} the serving estimate); "
            f"power cap {budget:,.0f} kW ({result['power']['algorithm']}); median of {repeat}",
        )
    )

    # One prepared training job placed (its candidates priced, the winning cards and counts chosen): the
    # step the plan repeats per workload, timed here rather than in a unit test (CONTRIBUTING: speed is
    # checked by `make bench`). Anchor: one ranking of the same job.
    one = validate_mix({"workloads": [mix_document()["workloads"][1]]})  # type: ignore[index]
    place_s = median_time(lambda: evaluate(frame, fresh, one, PlanOptions(), serving), repeat)
    report.add(
        Figure(
            name=f"{backend} place one prepared job over {n:,} live offers (in process)",
            value=place_s * 1000,
            unit="ms",
            anchor=anchor_s / WORKLOADS * 1000,
            anchor_label="1 ranking",
            anchor_unit="ms",
            ratio=place_s / (anchor_s / WORKLOADS),
            ratio_label="x 1 ranking",
            target="info",
            ok=None,
            note=f"tracker.plan.planner.evaluate of {one.workloads[0].name}; median of {repeat}",
        )
    )


__all__ = ["mix_document", "run"]
