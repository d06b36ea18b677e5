"""A self-hosted serving offer beside the model's serverless API prices, with the break-even volume.

What `cheapest --kind inference`, POST /v1/rank (kind inference) and the plan's serving workloads show:
for each API that serves the model, its $/Mtok for this job's prompt/answer shape, and the monthly
volume from which renting the offer's machine costs less, at the estimate's throughput and at both
ends of its band (a slower machine than estimated may never beat the API).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from tracker.estimate.serving.job import HOURS_PER_MONTH, SECONDS_PER_MONTH
from tracker.inference_apis.breakeven import api_usd_per_mtok_output, break_even
from tracker.inference_apis.sheets import load_sheet, prices_for
from tracker.money import to_money


def _at(machine_month: Decimal, tps: float | None, api: Decimal) -> dict[str, Any] | None:
    if tps is None or not tps > 0:
        return None
    return break_even(machine_month, tps, api, SECONDS_PER_MONTH).describe()


def api_alternatives(
    model_id: str, prompt_tokens: int, output_tokens: int, offer: dict[str, Any] | None, now: datetime
) -> dict[str, Any]:
    """The APIs for `model_id` and, if `offer` (a ranked row: provider, gpu, gpus, pricing,
    price_per_hour, tokens_per_second and its band) is given, the break-even against renting it."""
    sheet = load_sheet()
    machine_month: Decimal | None = None
    if offer is not None and offer.get("price_per_hour") is not None and offer.get("tokens_per_second"):
        machine_month = to_money(Decimal(str(offer["price_per_hour"])) * Decimal(repr(HOURS_PER_MONTH)))
    apis = []
    for price in prices_for(model_id):
        per_mtok = api_usd_per_mtok_output(
            price.input_usd_per_mtok, price.output_usd_per_mtok, prompt_tokens, output_tokens
        )
        row: dict[str, Any] = {**price.describe(), "usd_per_mtok": per_mtok, "break_even": None}
        if machine_month is not None and offer is not None:
            row["break_even"] = _at(machine_month, float(offer["tokens_per_second"]), per_mtok)
            row["break_even_band"] = {
                "low": _at(machine_month, offer.get("tokens_per_second_low"), per_mtok),
                "high": _at(machine_month, offer.get("tokens_per_second_high"), per_mtok),
            }
        apis.append(row)
    apis.sort(key=lambda r: (r["usd_per_mtok"], r["provider"]))
    self_hosted = None
    if offer is not None and machine_month is not None:
        keys = (
            "provider",
            "gpu",
            "gpus",
            "pricing",
            "region",
            "price_per_hour",
            "usd_per_mtok",
            "tokens_per_second",
            "tokens_per_second_low",
            "tokens_per_second_high",
        )
        self_hosted = {k: offer.get(k) for k in keys} | {"machine_usd_per_month": machine_month}
    return {
        "model": model_id,
        "volume_unit": "output tokens per month",
        "hours_per_month": HOURS_PER_MONTH,
        "sheet": {"read_on": sheet.read_on.isoformat(), "age_days": sheet.age_days(now), "stale": sheet.stale(now)},
        "self_hosted": self_hosted,
        "apis": apis,
        "cheapest_api": apis[0] if apis else None,
    }
