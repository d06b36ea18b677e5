"""The price index recomputed from an export alone (the open dataset, tracker.history.dataset): the same
inputs tracker.market.index_source reads from the database, read from the files instead, so anyone holding
an export can check every published value (tests/tracker/history/test_index_export.py does)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

from tracker.config import Settings
from tracker.history.imports.export_dir import read_export
from tracker.market.data_terms import may_republish
from tracker.market.index import IndexHistory, IndexOffer, IndexPrice, epoch_us

__all__ = ["history_from_export"]


def history_from_export(directory: Path, gpu_ids: Sequence[str], end: date, settings: Settings) -> IndexHistory:
    """The index's inputs for the cards `gpu_ids` from the export in `directory` (DatasetError when it
    cannot be read): offers, their price rows, and successful observations before `end`."""
    _, tables = read_export(directory)
    wanted = set(gpu_ids)
    offers = [
        IndexOffer(
            r["provider"],
            r["offer_key"],
            r["gpu_id"],
            r["gpu_family"],
            r["gpu_count"],
            r["pricing"],
            r["reserved_term"],
            r["region"],
            r["attributes"] or {},
            r["last_seen"],
            r.get("price_kind") or "asking",  # an export from before the column held asking prices only
            r.get("orderable") is not False,
            may_republish(r["provider"], settings),
        )
        for r in tables["offers"]
        if r["gpu_id"] in wanted
    ]
    prices = [
        IndexPrice(
            r["provider"],
            r["offer_key"],
            epoch_us(r["valid_from"]),
            None if r["valid_to"] is None else epoch_us(r["valid_to"]),
            float(r["price_per_gpu_hour"]),
        )
        for r in tables["prices"]
        if r["gpu_id"] in wanted
    ]
    providers = {o.provider for o in offers}
    until = datetime(end.year, end.month, end.day, tzinfo=UTC)
    observations: dict[str, list[int]] = {}
    for r in tables["runs"]:
        at = r["observed_at"]
        if r["provider"] in providers and r["status"] == "ok" and at is not None and at < until:
            observations.setdefault(r["provider"], []).append(epoch_us(at))
    return IndexHistory(offers, prices, observations)
