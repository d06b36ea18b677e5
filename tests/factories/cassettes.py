"""Shared helpers for provider tests: replay a cassette offline, record what an adapter sends, build
malformed responses, and check gpuhunt-style invariants."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.contract import (
    FetchContext,
    MissingCredentials,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.fx.ecb import parse_eurofxref
from tracker.catalog.gpus import get_catalog
from tracker.config import Settings
from tracker.ingest.validate import validate_batch

Mutation = Callable[[dict[str, Any]], None]  # changes a cassette's raw JSON in place


class SpyTransport(ReplayTransport):
    """Replays a cassette and keeps every request the adapter sent, exactly as sent."""

    def __init__(self, cassette: Cassette) -> None:
        super().__init__(cassette)
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await super().handle_async_request(self.as_recorded(request))

    def as_recorded(self, request: httpx.Request) -> httpx.Request:
        """The request as the cassette holds it: override to drop what recording left out."""
        return request


def fetch_recording(
    provider: type[Provider],
    credentials: Mapping[str, str] | None = None,
    cassette: Cassette | None = None,
    *,
    transport: type[SpyTransport] = SpyTransport,
) -> tuple[ScrapeResult, list[httpx.Request]]:
    """Fetch with exactly `credentials` (none by default) against `cassette` (default: the bundled one),
    offline and with no backoff waits; return the result and every request sent, retries included."""
    spy = transport(cassette if cassette is not None else Cassette.load(bundled_cassette(provider.name)))

    async def go() -> ScrapeResult:
        async with httpx.AsyncClient(transport=spy, timeout=5) as client:
            ctx = FetchContext(client=client, credentials=dict(credentials or {}), retries=3, backoff_base_s=0)
            return await provider().fetch(ctx)

    return asyncio.run(go()), spy.requests


def replay_credentials(provider: type[Provider], **credentials: str) -> dict[str, str]:
    """The credentials `replay` runs with: every declared (required) credential set, as the pipeline's demo
    path sets them, to the provider's `demo_credentials` value where it has one and to "test-secret"
    otherwise; `credentials` given explicitly win. A demo value matters where the cassette depends on it
    (an organization id in a URL path, unlike a secret, which recording redacts)."""
    demo = {c: provider.demo_credentials.get(c, "test-secret") for c in provider.credentials}
    return demo | credentials


def replay(provider: type[Provider], cassette: Cassette | Path | None = None, **credentials: str) -> ScrapeResult:
    """Run a provider against a cassette (default: its bundled one), offline, with no backoff waits,
    with `replay_credentials(provider, **credentials)`."""
    if cassette is None and provider.kind == ProviderKind.static_sheet:
        cassette = Cassette(provider.name, [])  # a static sheet makes no request: an empty cassette proves it
    if isinstance(cassette, Path):
        cassette = Cassette.load(cassette)
    return fetch_recording(provider, replay_credentials(provider, **credentials), cassette)[0]


def replay_fixture(provider: type[Provider]) -> Any:
    """A module-scoped fixture named `result`: `provider` replayed against its bundled cassette.

    Use as `result = replay_fixture(Provider)` in a test module."""

    @pytest.fixture(scope="module", name="result")
    def fixture() -> ScrapeResult:
        return replay(provider)

    return fixture


def by_key(result: ScrapeResult) -> dict[str, ScrapedOffer]:
    return {o.key: o for o in result.offers}


# --- malformed responses -------------------------------------------------------------------------


def mutated_cassette(provider: type[Provider], mutate: Mutation) -> Cassette:
    """The bundled cassette with its JSON changed by `mutate` (to build malformed responses)."""
    raw = json.loads(bundled_cassette(provider.name).read_text())
    raw = copy.deepcopy(raw)
    mutate(raw)
    return Cassette.from_json(raw)


def answer(
    status: int, *, json: Any = None, text: str | None = None, at: int | Iterable[int] | slice | None = None
) -> Mutation:
    """A mutation: the interaction(s) `at` (an index, several, a slice; every one when None) answer `status`
    with the JSON body `json`, or with the raw `text` when given (e.g. a JSON body cut short)."""

    def mutate(raw: dict[str, Any]) -> None:
        interactions = raw["interactions"]
        if at is None or isinstance(at, slice):
            indexes: Iterable[int] = range(len(interactions))[at or slice(None)]
        else:
            indexes = [at] if isinstance(at, int) else at
        body = {"text": text} if text is not None else {"json": json}
        for i in indexes:
            interactions[i]["response"] = {"status": status, "headers": {}} | body

    return mutate


def _json_at(raw: dict[str, Any], index: int, path: tuple[str | int, ...]) -> tuple[Any, str | int]:
    node = raw["interactions"][index]["response"]
    keys: tuple[str | int, ...] = ("json", *path)
    for key in keys[:-1]:
        node = node[key]
    return node, keys[-1]


def json_without(index: int, *path: str | int) -> Mutation:
    """A mutation: delete the field at `path` in interaction `index`'s JSON body."""

    def mutate(raw: dict[str, Any]) -> None:
        node, key = _json_at(raw, index, path)
        del node[key]

    return mutate


def json_with(index: int, *path: str | int, value: Any) -> Mutation:
    """A mutation: set the field at `path` in interaction `index`'s JSON body (the whole body when no path)."""

    def mutate(raw: dict[str, Any]) -> None:
        node, key = _json_at(raw, index, path)
        node[key] = value

    return mutate


# --- failure checks ------------------------------------------------------------------------------


def assert_replay_raises(provider: type[Provider], mutate: Mutation, match: str, **credentials: str) -> str:
    """Replaying `provider` against its bundled cassette changed by `mutate` raises a ProviderError whose
    message matches `match` (a regex, as in pytest.raises); returns the message."""
    with pytest.raises(ProviderError, match=match) as info:
        replay(provider, mutated_cassette(provider, mutate), **credentials)
    return str(info.value)


def assert_secrets_hidden(provider: type[Provider], credentials: dict[str, str], mutate: Mutation, status: int) -> str:
    """Fetching with `credentials` against the bundled cassette changed by `mutate` raises a ProviderError that
    reports `HTTP <status>` and holds none of the credential values; returns the message."""
    with pytest.raises(ProviderError) as info:
        fetch_recording(provider, credentials, mutated_cassette(provider, mutate))
    message = str(info.value)
    assert f"HTTP {status}" in message, message
    for secret in credentials.values():
        assert secret not in message, f"credential {secret!r} leaked into {message!r}"
    return message


def assert_missing_credentials(provider: type[Provider], match: str, **credentials: str) -> None:
    """Fetching with only `credentials` (none by default) raises MissingCredentials matching `match`."""
    with pytest.raises(MissingCredentials, match=match):
        fetch_recording(provider, credentials)


# --- invariants ----------------------------------------------------------------------------------


def usd_per_unit(currency: str) -> Decimal:
    """USD per unit of `currency` on the bundled ECB day (providers/cassettes/fx_ecb.json): price bands are
    in USD, so a JPY or EUR quote is checked as ingest would convert it."""
    if currency == "USD":
        return Decimal(1)
    (day,) = Cassette.load(bundled_cassette("fx_ecb")).interactions
    return parse_eurofxref((day.text or "").encode())[-1].usd_per_unit[currency]


def resolve_all(result: ScrapeResult, provider: str | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """(offer key → canonical GPU id, raw name → why not) for every offer, exactly as ingest resolves them.

    Names resolve whatever the quote's currency; `validate_batch` without a rate book sets every non-USD
    offer aside (conversion is ingest's business, tested there), so resolution runs on a copy converted to
    USD at the bundled ECB day (`usd_per_unit`)."""
    # Validation notes an assumed variant on the offer itself (attributes["variant_assumed"]): a copy's note is
    # carried back, so callers see the same offers ingest would store.
    # The amount is converted too: a ¥990 quote read as $990 would trip the sanity ceiling.
    copies = {
        id(o): replace(o, currency="USD", price_per_hour=o.price_per_hour * usd_per_unit(o.currency))
        for o in result.offers
        if o.currency != "USD"
    }
    offers = [copies.get(id(o), o) for o in result.offers]
    prepared = validate_batch(
        ScrapeResult(offers=offers, skipped=list(result.skipped)), get_catalog(), Settings(), provider
    )
    for original in result.offers:
        if (copy_ := copies.get(id(original))) is not None:
            original.attributes = copy_.attributes
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
        assert o.price_per_gpu_hour * usd_per_unit(o.currency) < 200, o
        assert o.gpu_name.strip(), o
        if o.gpu_memory_gb is not None:
            assert o.gpu_memory_gb > 0, o
    resolved, unknown = resolve_all(result, provider)
    assert set(unknown) <= set(allowed_unknown), f"unresolved GPU names: {unknown}"
    missing = expected_gpus - set(resolved.values())
    assert not missing, f"expected GPUs absent: {missing}; got {sorted(set(resolved.values()))}"
    return resolved


def assert_replay_drops(provider: type[Provider], mutate: Mutation, match: str, **credentials: str) -> str:
    """Replaying `provider` against its bundled cassette changed by `mutate` (one malformed object) drops
    that object with a reason matching `match` (a regex) and keeps the rest: the run does not fail
    (`providers.parsing.dropping`). Returns the reason."""
    import re

    baseline = replay(provider, None, **credentials)
    result = replay(provider, mutated_cassette(provider, mutate), **credentials)
    dropped = [r for r in result.skipped if "dropped" in r and re.search(match, r)]
    assert dropped, f"no dropped object matching {match!r} in {result.skipped}"
    assert len(result.offers) < len(baseline.offers) or not baseline.offers or result.offers, result.skipped
    return dropped[0]
