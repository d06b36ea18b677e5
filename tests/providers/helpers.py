"""Shared helpers for provider tests: replay a cassette offline and check gpuhunt-style invariants."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

from providers.base import FetchContext, Provider, ProviderKind
from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from tracker.config import Settings
from tracker.gpus import get_catalog
from tracker.ingest import prepare
from tracker.offers import ScrapeResult


def replay(provider: type[Provider], cassette: Cassette | Path | None = None, **credentials: str) -> ScrapeResult:
    """Run a provider against a cassette (default: its bundled one), offline, with no backoff waits."""
    if cassette is None:
        # A static sheet makes no request: an empty cassette proves it.
        sheet = provider.kind == ProviderKind.static_sheet
        cassette = Cassette(provider.name, []) if sheet else bundled_cassette(provider.name)
    if isinstance(cassette, Path):
        cassette = Cassette.load(cassette)
    creds = {c: "test-secret" for c in provider.credentials} | credentials

    async def go() -> ScrapeResult:
        async with httpx.AsyncClient(transport=ReplayTransport(cassette), timeout=5) as client:
            return await provider().fetch(FetchContext(client=client, credentials=creds, retries=3, backoff_base_s=0))

    return asyncio.run(go())


def mutated_cassette(provider: type[Provider], mutate: Callable[[dict[str, Any]], None]) -> Cassette:
    """The bundled cassette with its JSON changed by `mutate` (to build malformed responses)."""
    raw = json.loads(bundled_cassette(provider.name).read_text())
    raw = copy.deepcopy(raw)
    mutate(raw)
    return Cassette.from_json(raw)


def resolve_all(result: ScrapeResult, provider: str | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """(offer key → canonical GPU id, raw name → why not) for every offer, exactly as ingest resolves them."""
    prepared = prepare(result, get_catalog(), Settings(), provider)
    return {v.scraped.key: v.gpu.id for v in prepared.valid}, prepared.unknown


def assert_integrity(
    result: ScrapeResult,
    *,
    expected_gpus: set[str],
    allowed_unknown: set[str] = frozenset(),  # type: ignore[assignment]
    min_offers: int = 1,
    provider: str | None = None,
) -> dict[str, str]:
    """gpuhunt-style invariants: offers present, sane prices and counts, known GPUs, keys unique."""
    assert len(result.offers) >= min_offers, f"expected ≥{min_offers} offers, got {len(result.offers)}"
    keys = [o.key for o in result.offers]
    assert len(keys) == len(set(keys)), "offer keys must be unique within a batch"
    for o in result.offers:
        assert isinstance(o.price_per_hour, Decimal) and o.price_per_hour > 0, o
        assert isinstance(o.gpu_count, Decimal) and o.gpu_count > 0, o
        assert o.price_per_gpu_hour < 200, o
        assert o.gpu_name.strip(), o
        if o.gpu_memory_gb is not None:
            assert o.gpu_memory_gb > 0, o
    resolved, unknown = resolve_all(result, provider)
    assert set(unknown) <= set(allowed_unknown), f"unresolved GPU names: {unknown}"
    missing = expected_gpus - set(resolved.values())
    assert not missing, f"expected GPUs absent: {missing}; got {sorted(set(resolved.values()))}"
    return resolved
