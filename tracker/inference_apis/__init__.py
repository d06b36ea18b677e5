"""Serverless inference APIs: the per-token alternative to renting GPUs for serving.

`sheets` loads the dated price sheets (data/serverless.toml: published $/Mtok per provider and model,
each with its source URL); `breakeven` is the pure arithmetic of renting against calling an API;
`compare` puts a self-hosted offer beside a model's API prices, as the rankings and the plan show it.
"""

from tracker.inference_apis.breakeven import BreakEven, api_usd_per_mtok_output, break_even
from tracker.inference_apis.compare import api_alternatives
from tracker.inference_apis.sheets import ApiPrice, SheetError, load_sheet, prices_for

__all__ = [
    "ApiPrice",
    "BreakEven",
    "SheetError",
    "api_alternatives",
    "api_usd_per_mtok_output",
    "break_even",
    "load_sheet",
    "prices_for",
]
