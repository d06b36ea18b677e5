"""Replicate's published per-second hardware rates, shipped as a dated price-page sheet.

Replicate's `GET /v1/hardware` returns only `{name, sku}`; the prices are on
replicate.com/pricing, per second and per instance. `providers/sheets/replicate.toml` keeps each as
written (`price_per_second`, with the instance's GPU count and sku as `instance_type`), and
`providers.sheet` turns it into $ per instance-hour. Labelled reference data wherever it shows; stale
past TRACKER_SHEET_MAX_AGE_DAYS.
"""

from __future__ import annotations

from providers.sheet import StaticSheetProvider


class ReplicateRates(StaticSheetProvider):
    name = "replicate"
    title = "Replicate published per-second rates (price page)"
    homepage = "https://replicate.com/pricing"
    sheet = "replicate"
