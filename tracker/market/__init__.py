"""The market read side: which prices are live (`freshness`, the one rule), the live offer table
(`live`), statistics now and over time (`statistics`), ranking offers for a job (`rank`), offer
queries (`offers`), quality and availability (`quality`, `availability`), and the answers the API and
CLI serve (`service`, `overview`). Submodules are imported where used, so a command loads only its own."""

__all__ = ["availability", "freshness", "live", "offers", "overview", "quality", "rank", "service", "statistics"]
