"""The seed's "marketplace median rates" table, shipped as a static reference sheet (not live prices)."""

from __future__ import annotations

from providers.sheet import StaticSheetProvider


class ReferenceRates(StaticSheetProvider):
    name = "reference"
    title = "Seed marketplace median rates (reference)"
    sheet = "reference"
