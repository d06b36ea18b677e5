"""Ingest: one provider batch in one transaction — per-offer validation (`validate`), batch quarantine
(`quarantine`), the change-only history of prices and availability decided without a database (`diff`)
and written (`apply`). Entry point: `tracker.ingest.batch.ingest`."""

__all__ = ["apply", "batch", "costs", "diff", "fx", "quarantine", "validate"]
