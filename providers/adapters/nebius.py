"""Nebius's published on-demand and preemptible GPU rates, shipped as a dated price-page sheet.

Nebius answers prices only over gRPC (`billing.v1 CalculatorService.Estimate` per preset, with a
service-account key), and this project has no gRPC client or
Nebius SDK, so the rates live in `providers/sheets/nebius.toml`: the per-GPU-hour table of
nebius.com/prices with the date it was read, `source_type = "price_page"`, labelled reference data wherever
they show. Preemptible rates are spot offers of the same machine. Update the sheet by hand when the page
changes; the market marks it stale once it is older than TRACKER_SHEET_MAX_AGE_DAYS.
"""

from __future__ import annotations

from providers.sheet import StaticSheetProvider


class NebiusRates(StaticSheetProvider):
    name = "nebius"
    title = "Nebius published GPU rates (price page)"
    homepage = "https://nebius.com/prices"
    sheet = "nebius"
