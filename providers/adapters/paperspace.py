"""Paperspace's (DigitalOcean) published GPU machine rates, shipped as a dated price-page sheet.

No pricing API (SkyPilot also ships a static catalog): the hourly machine rates
of paperspace.com/pricing live in `providers/sheets/paperspace.toml`, with the date they were read and
`source_type = "price_page"`. The page's 3-year HGX H100 commitment is kept as a reserved rate with its
term, apart from on-demand. Labelled reference data wherever it shows; stale past
TRACKER_SHEET_MAX_AGE_DAYS.
"""

from __future__ import annotations

from providers.sheet import StaticSheetProvider


class PaperspaceRates(StaticSheetProvider):
    name = "paperspace"
    title = "Paperspace published machine rates (price page)"
    homepage = "https://www.paperspace.com/pricing"
    sheet = "paperspace"
