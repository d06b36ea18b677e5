"""Money: the one rounding rule for every amount the service stores, computes or serves.

Every amount — $/hour, $/GPU-hour, cost per run, $ per million tokens, alert values — is a `Decimal` in
USD with six decimal places (micro-dollars), rounded half-to-even once, at the end, from the exact
inputs. Six places is the scale of the `Money` column, so an amount read back from the database is
already in its final form; it is also fine enough for per-token prices (a $/Mtok of 0.000123 is a real
figure) and for slices priced at fractions of a cent. Because every path ends in `to_money`, the same
job, card and price give the same figure in `/v1/estimate`, `/v1/rank`, `/v1/rank/history` and alerts.
People-facing text (the CLI's tables, the dashboard) may show fewer digits; the JSON never does.

Physics (hours, tokens/s) stays in floats; a float enters money only through `Decimal(repr(x))`, its
shortest exact decimal form, so no binary noise is rounded in.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

__all__ = ["PLACES", "QUANTUM", "cost", "machine_price", "parse_amount", "per_million_tokens", "to_money"]

PLACES = 6
QUANTUM = Decimal(1).scaleb(-PLACES)  # 0.000001 USD
_TOKENS_PER_MILLION = Decimal(1_000_000)
_SECONDS_PER_HOUR = Decimal(3600)


def _decimal(value: Decimal | float | int | str) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    return Decimal(value)


def to_money(value: Decimal | float | int | str) -> Decimal:
    """`value` in USD, rounded by the rule: six places, half to even."""
    return _decimal(value).quantize(QUANTUM, rounding=ROUND_HALF_EVEN)


def machine_price(price_per_gpu_hour: Decimal | float, gpus: float) -> Decimal:
    """The $/hour of `gpus` GPUs at a $/GPU-hour (a fractional count for a slice)."""
    return to_money(_decimal(price_per_gpu_hour) * _decimal(gpus))


def cost(price_per_hour: Decimal | float, hours: float) -> Decimal:
    """What `hours` of an offer priced at `price_per_hour` (the whole offer, all its GPUs) costs."""
    return to_money(_decimal(price_per_hour) * _decimal(hours))


def per_million_tokens(price_per_hour: Decimal | float, tokens_per_second: float) -> Decimal:
    """$ per million tokens processed at `tokens_per_second` on an offer priced at `price_per_hour`."""
    tokens_per_hour = _decimal(tokens_per_second) * _SECONDS_PER_HOUR
    return to_money(_decimal(price_per_hour) * _TOKENS_PER_MILLION / tokens_per_hour)


def parse_amount(value: Decimal | float | int | str) -> Decimal:
    """A dollar amount as people write it (`2.5`, `"$2.50"`, `Decimal("2.5")`), finite, not negative.

    Raises ValueError with a readable message; callers attach the field name.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected an amount in dollars, got {value!r}")
    try:
        amount = _decimal(value) if not isinstance(value, str) else Decimal(value.strip().lstrip("$"))
    except (InvalidOperation, ValueError):
        raise ValueError(f"expected an amount in dollars, got {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"expected a non-negative amount in dollars, got {value!r}")
    return amount
