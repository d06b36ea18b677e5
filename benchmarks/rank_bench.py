"""§4 Rank compute: ranking the live 20,000-offer frame for one job spec, in process.

Measured: `tracker.market.rank.rank` on the cached LIVE frame (what POST /v1/rank does after parsing the body),
for a job it has ranked before, and for a new job every time (issue #29: what a real user meets; the job is
prepared and ranked, the frame warm, nothing memoised for that job yet).
Anchor: ordering the same offers by price and id with `np.lexsort` — the least work any ranking by cost
has to do — so the ratio says how far the ranking is from "just sort the prices".
"""

from __future__ import annotations

import statistics
import time
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine

from benchmarks.common import Figure, Report, median_time
from tracker.clock import utcnow
from tracker.config import Settings
from tracker.estimate import make_job, prepare
from tracker.market.live import LIVE, fresh_mask
from tracker.market.rank import RankFilters, RankOptions, rank
from tracker.storage.engine import session_scope

JOB = {"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M"}
# New jobs: these models and methods with token counts no other job of the run asks for.
VARIED = (("llama-3.1-8b", "qlora"), ("qwen2.5-7b", "lora"), ("mistral-7b", "full"), ("llama-3.1-70b", "qlora"))
NEW_JOB_TARGET = 2.0  # issue #29: a new job's rank within 2x of np.lexsort of the same offers


def new_job(i: int) -> tuple[str, str, str]:
    """The i-th job no ranking has seen: a model and method of VARIED, a token count of its own."""
    model, method = VARIED[i % len(VARIED)]
    return model, method, f"{11 + i * 0.173:.3f}M"


def run(report: Report, backend: str, engine: Engine, repeat: int) -> None:
    settings = Settings(database_url=engine.url.render_as_string(hide_password=False))
    with session_scope(engine) as session:
        _, frame = LIVE.frame(engine, session)
    prepared = prepare(make_job(JOB["model"], JOB["method"], tokens=JOB["tokens"]), None)
    now = utcnow()
    fresh = fresh_mask(frame, now, settings)
    n = int(fresh.sum())
    result = rank(frame, fresh, prepared, RankFilters(), RankOptions(), now)
    assert result["considered"] == n and result["rows"], result.get("considered")

    seconds = median_time(lambda: rank(frame, fresh, prepared, RankFilters(), RankOptions(), now), repeat)
    price = frame["price_per_hour_f"]
    ids = frame["id"]
    # Many repetitions: a 20,000-element sort is well under a millisecond, too short to time once.
    t = time.perf_counter()
    for _ in range(100):
        np.lexsort((ids, price))
    anchor_s = (time.perf_counter() - t) / 100
    report.add(
        Figure(
            name=f"{backend} rank {n:,} live offers for one job (in process)",
            value=n / seconds,
            unit="offers/s",
            anchor=n / anchor_s,
            anchor_label="np.lexsort",
            anchor_unit="offers/s",
            ratio=anchor_s / seconds,
            ratio_label="x sort speed",
            target="info",
            ok=None,
            note=f"{seconds * 1000:.1f} ms per ranking (the /v1/rank p99 budget is 100 ms); "
            f"{result['fitting']:,} fit; median of {repeat}",
        )
    )
    new_s, prepare_s = _new_jobs(frame, fresh, now, repeat)
    report.add(
        Figure(
            name=f"{backend} rank {n:,} live offers for a new job every time (warm, in process)",
            value=new_s * 1000,
            unit="ms",
            anchor=anchor_s * 1000,
            anchor_label="np.lexsort",
            anchor_unit="ms",
            ratio=new_s / anchor_s,
            ratio_label="x lexsort",
            target=f"<= {NEW_JOB_TARGET:g}x lexsort",
            ok=new_s <= NEW_JOB_TARGET * anchor_s,
            note=f"prepare + rank, of which prepare {prepare_s * 1000:.1f} ms; median of {repeat} distinct jobs",
        )
    )


def _new_jobs(frame: Any, fresh: Any, now: datetime, repeat: int) -> tuple[float, float]:
    """Median seconds to prepare and rank a job never ranked before, and of that the prepare alone."""
    totals, prepares = [], []
    for i in range(repeat):
        model, method, tokens = new_job(i)
        t = time.perf_counter()
        prepared = prepare(make_job(model, method, tokens=tokens), None)
        p = time.perf_counter()
        rank(frame, fresh, prepared, RankFilters(), RankOptions(), now)
        totals.append(time.perf_counter() - t)
        prepares.append(p - t)
    return statistics.median(totals), statistics.median(prepares)
