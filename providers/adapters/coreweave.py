"""CoreWeave's published on-demand and spot instance rates, shipped as a dated price-page sheet.

CoreWeave has no public pricing API (SkyPilot reaches it only through
Kubernetes), so the rates live in `providers/sheets/coreweave.toml`, transcribed from
coreweave.com/pricing with the date it was read, `source_type = "price_page"`, and are labelled reference
data wherever they show. The page prices whole instances (8 GPUs, a 4-GPU GB200 unit, one GH200): the
sheet keeps that price and count. Update the sheet by hand when the page changes; the market marks it
stale once it is older than TRACKER_SHEET_MAX_AGE_DAYS.
"""

from __future__ import annotations

from providers.sheet import StaticSheetProvider


class CoreWeaveRates(StaticSheetProvider):
    name = "coreweave"
    title = "CoreWeave published rates (price page)"
    homepage = "https://www.coreweave.com/pricing"
    sheet = "coreweave"
