"""Crusoe Cloud's published per-GPU rates, shipped as a static sheet.

Crusoe's API (`/v1alpha5/.../compute/vms/types`, `/capacities`, HMAC-signed) lists machine types and
capacity but no prices, so there is nothing to scrape: the rates live in `providers/sheets/crusoe.toml`,
transcribed from the per-GPU table of crusoe.ai/cloud/pricing as
gpuhunt recorded it (dstackai/gpuhunt@35841515), and are
labelled reference data (source + as_of) wherever they show. Update the sheet by hand when Crusoe's
pricing page changes.
"""

from __future__ import annotations

from providers.sheet import StaticSheetProvider


class CrusoeRates(StaticSheetProvider):
    name = "crusoe"
    title = "Crusoe Cloud published rates (reference)"
    homepage = "https://crusoe.ai/cloud/pricing"
    sheet = "crusoe"
