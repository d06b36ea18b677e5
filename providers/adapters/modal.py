"""Modal's published per-second serverless GPU rates, shipped as a dated price-page sheet.

Modal has no pricing API: modal.com/pricing quotes $ per GPU-second, which the
sheet (`providers/sheets/modal.toml`) keeps as written (`price_per_gpu_second`) and `providers.sheet`
turns into $/GPU-hour (× 3600). Base rates only: Modal's region (1.5×/1.75×) and non-preemptible (3×)
multipliers, and CPU/memory billed alongside, are not in the figure. Labelled reference data wherever it
shows; stale past TRACKER_SHEET_MAX_AGE_DAYS.
"""

from __future__ import annotations

from providers.sheet import StaticSheetProvider


class ModalRates(StaticSheetProvider):
    name = "modal"
    title = "Modal published per-second rates (price page)"
    homepage = "https://modal.com/pricing"
    sheet = "modal"
