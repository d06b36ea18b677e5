"""Ingest: one provider batch in one transaction — per-offer validation, batch quarantine, and the
change-only history of prices and availability. Entry point: `tracker.ingest.batch.ingest`."""

__all__ = ["batch", "quarantine"]
