"""Crusoe Cloud's published per-GPU rates, shipped as a static sheet (providers.md A.1 #19, C.2 "Crusoe").

Crusoe's API (`/v1alpha5/.../compute/vms/types`, `/capacities`, HMAC-signed) lists machine types and
capacity but no prices, so there is nothing to scrape: the rates live in `providers/sheets/crusoe.toml`,
transcribed from the per-GPU table of crusoe.ai/cloud/pricing as recorded in providers.md §C.2, and are
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
