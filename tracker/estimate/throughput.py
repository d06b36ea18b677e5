"""Throughput and money: the few operations that run per (job, offer) pair.

tokens/s = GPUs × dense BF16 peak × efficiency × multi-GPU scaling / FLOPs per token.
Physics stays in floats; money is computed and rounded by `tracker.money` alone.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from tracker.estimate.errors import InvalidJob
from tracker.money import parse_amount

SECONDS_PER_HOUR = 3600.0


def tokens_per_second(
    peak_flops: float, gpus: float, efficiency: float, scaling: float, flops_per_token: float
) -> float:
    return gpus * peak_flops * efficiency * scaling / flops_per_token


Rate = TypeVar("Rate", float, npt.NDArray[np.float64])


def hours_for(tokens: float, tps: Rate) -> Rate:
    """Hours to process `tokens` at `tps` (one rate, or an array of them: the same IEEE divisions)."""
    return tokens / tps / SECONDS_PER_HOUR


def as_price(value: Decimal | float | int | str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        return parse_amount(value)
    except ValueError as exc:
        raise InvalidJob(f"price must be a non-negative amount in $/GPU-hour, got {value!r}", field="price") from exc
