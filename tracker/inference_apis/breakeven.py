"""Renting GPUs against paying per token: pure arithmetic, no data access.

A self-hosted machine costs the same every month whatever it serves (it is rented by the hour and
kept up); an API costs its price times the tokens. So renting wins from the volume at which the
machine's monthly bill equals the API's bill for the same tokens, provided the machine can serve that
volume at all: if even at full load its $/Mtok is above the API's, the API wins at every volume.

Volumes are output (generated) tokens per month, the unit of the serving estimate's load; an API's
price per output token carries the prompts that come with each answer (`api_usd_per_mtok_output`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from tracker.money import to_money

_MILLION = Decimal(1_000_000)


def api_usd_per_mtok_output(
    input_usd_per_mtok: Decimal, output_usd_per_mtok: Decimal, prompt_tokens: int, output_tokens: int
) -> Decimal:
    """What 1M generated tokens cost through the API, with the prompt tokens each answer is sent."""
    if output_tokens <= 0 or prompt_tokens < 0:
        raise ValueError("output_tokens must be above 0 and prompt_tokens at least 0")
    return to_money(output_usd_per_mtok + input_usd_per_mtok * Decimal(prompt_tokens) / Decimal(output_tokens))


@dataclass(frozen=True)
class BreakEven:
    """The volume from which renting the machine costs less than the API, and how busy it is there."""

    machine_usd_per_month: Decimal
    capacity_tokens_per_month: float  # output tokens the machine serves in a month at full load
    self_host_usd_per_mtok: Decimal  # at full load
    api_usd_per_mtok: Decimal
    tokens_per_month: float | None  # None: the API is cheaper at every volume this machine can serve
    utilisation: float | None  # break-even volume over capacity

    def describe(self) -> dict[str, object]:
        return {
            "machine_usd_per_month": self.machine_usd_per_month,
            "capacity_tokens_per_month": self.capacity_tokens_per_month,
            "self_host_usd_per_mtok": self.self_host_usd_per_mtok,
            "api_usd_per_mtok": self.api_usd_per_mtok,
            "break_even_tokens_per_month": self.tokens_per_month,
            "break_even_utilisation": self.utilisation,
        }


def break_even(
    machine_usd_per_month: Decimal, tokens_per_second: float, api_usd_per_mtok: Decimal, seconds_per_month: float
) -> BreakEven:
    """Renting one machine (`machine_usd_per_month`, serving `tokens_per_second` at full load) against
    an API at `api_usd_per_mtok` per generated token."""
    if machine_usd_per_month < 0 or api_usd_per_mtok < 0:
        raise ValueError("prices must be at least 0")
    if not tokens_per_second > 0 or not seconds_per_month > 0:
        raise ValueError("tokens_per_second and seconds_per_month must be above 0")
    capacity = tokens_per_second * seconds_per_month
    self_host = to_money(machine_usd_per_month * _MILLION / Decimal(repr(capacity)))
    volume: float | None = None
    if api_usd_per_mtok > 0 and machine_usd_per_month * _MILLION <= api_usd_per_mtok * Decimal(repr(capacity)):
        volume = float(machine_usd_per_month * _MILLION / api_usd_per_mtok)
    return BreakEven(
        machine_usd_per_month=to_money(machine_usd_per_month),
        capacity_tokens_per_month=capacity,
        self_host_usd_per_mtok=self_host,
        api_usd_per_mtok=api_usd_per_mtok,
        tokens_per_month=volume,
        utilisation=None if volume is None else volume / capacity,
    )
