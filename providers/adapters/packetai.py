"""packet.ai's published on-demand rates (seed 003), shipped as a static sheet."""

from __future__ import annotations

from providers.sheet import StaticSheetProvider


class PacketAiRates(StaticSheetProvider):
    name = "packetai"
    title = "packet.ai published on-demand rates"
    homepage = "https://packet.ai"
    sheet = "packetai"
