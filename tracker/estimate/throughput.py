"""Throughput and money: the few operations that run per (job, offer) pair.

tokens/s = GPUs × dense BF16 peak × efficiency × multi-GPU scaling / FLOPs per token.
Physics stays in floats; money leaves as Decimal so sums of run costs do not drift.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from tracker.estimate.errors import InvalidJob

SECONDS_PER_HOUR = 3600.0
_MONEY_PLACES = 6  # sub-cent precision: $/1M tokens are often fractions of a cent per 1K tokens


def tokens_per_second(peak_flops: float, gpus: float, efficiency: float, scaling: float,
                      flops_per_token: float) -> float:
    return gpus * peak_flops * efficiency * scaling / flops_per_token


def hours_for(tokens: float, tps: float) -> float:
    return tokens / tps / SECONDS_PER_HOUR


def to_money(value: float) -> Decimal:
    return Decimal(repr(round(value, _MONEY_PLACES)))


def as_price(value: Decimal | float | int | str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        price = value if isinstance(value, Decimal) else Decimal(str(value).strip().lstrip("$"))
    except InvalidOperation as exc:
        raise InvalidJob(f"price must be an amount in $/GPU-hour, got {value!r}", field="price") from exc
    if not price.is_finite() or price < 0:
        raise InvalidJob(f"price must be a non-negative amount in $/GPU-hour, got {value!r}", field="price")
    return price
