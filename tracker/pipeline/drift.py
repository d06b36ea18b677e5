"""Drift check: has a provider's API moved away from what its parser was written against?

For each provider, a fetch (live, or a cassette given to replay) is compared with a baseline learned from
the provider's bundled cassette:

(a) the schema. The baseline is the adapter itself, run over its bundled cassette with every decoded body
    traced (`providers.schema.capture_json(trace=True)`): the key paths the parser looks up, and that every
    object of the baseline carries, are the fields it needs. A needed field absent from every object that
    could hold it in the fetched bodies is *missing*; one whose values changed kind (number → object) has
    *changed type*; both are drift. Paths the fetched bodies have and the baseline does not are *new*:
    reported, but not drift (an API adding a field breaks no parser).
(b) GPU names the catalog does not resolve, beyond those the baseline already leaves unresolved;
(c) per card and pricing, the median and p10/p90 $/GPU-hour against the offers listed in the database (the
    last good run); a median that moved beyond ×1.5 either way is drift;
(d) the fetch's own failure (the ProviderError message, a timeout, a parser bug).

`schema_warnings` is the same schema comparison for one run's captured bodies, for a caller that fetches
on its own (the worker) and wants to log them.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import httpx
from sqlalchemy import Engine, select

from providers.cassette import Cassette, CassetteError, ReplayTransport, bundled_cassette
from providers.contract import FetchContext, MissingCredentials, Provider, ProviderError, ProviderKind, ScrapeResult
from providers.fetching import fetch_offers
from providers.parsing import DROP_MARK
from providers.registry import all_providers, get_provider
from providers.schema import ANY_KEY, Capture, KeyPath, Shape, capture_json, format_path, owner_of
from tracker.catalog.gpus import get_catalog
from tracker.clock import utcnow
from tracker.config import Settings
from tracker.ingest.fx import RateBook
from tracker.ingest.validate import ValidOffer, validate_batch
from tracker.pipeline.credentials import credentials_of
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer

__all__ = [
    "PRICE_MOVE_FACTOR",
    "Baseline",
    "EndpointNeeds",
    "FieldIssue",
    "PriceMove",
    "ProviderDrift",
    "Spread",
    "baseline_for",
    "check_provider",
    "learn_baseline",
    "price_moves",
    "run_doctor",
    "schema_warnings",
    "summarised",
]

PRICE_MOVE_FACTOR = 1.5  # a card's median $/GPU-hour moving more than this, up or down, is drift
USER_AGENT = "gpu-price-tracker/0.1 (+https://github.com/gpu-price-tracker)"  # as tracker.pipeline.scraping sends

TransportFactory = Callable[[type[Provider]], httpx.AsyncBaseTransport]


# --- (a) schema -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EndpointNeeds:
    """What the parser needs of one endpoint's responses, learned from the baseline."""

    endpoint: str
    needed: frozenset[KeyPath]  # read by the parser and carried by every baseline object that could hold it
    known: frozenset[KeyPath]  # every path of the baseline bodies
    maps: frozenset[KeyPath]  # objects the parser iterates: their keys are data, compared as `*`
    kinds: Mapping[KeyPath, frozenset[str]]  # the kinds of value each path held


@dataclass(frozen=True)
class Baseline:
    provider: str
    endpoints: Mapping[str, EndpointNeeds]
    unknown_names: frozenset[str]  # names the bundled cassette itself leaves unresolved: not news
    offers: int
    error: str | None = None  # the bundled cassette could not be replayed: nothing to compare with


@dataclass(frozen=True)
class FieldIssue:
    endpoint: str
    field: str  # a key path, as `offers[].dph_total`
    change: Literal["missing", "type", "new"]
    detail: str = ""  # for a type change: "number → string"
    count: int = 1  # how many fields this finding stands for (more than one: a summary, see `summarised`)

    @property
    def drift(self) -> bool:
        return self.change != "new"

    def __str__(self) -> str:
        what = {"missing": "missing field", "type": "changed type of field", "new": "new field"}[self.change]
        detail = f" ({self.detail})" if self.detail else ""
        return f"{what} `{self.field}`{detail} in {self.endpoint}"

    def as_dict(self) -> dict[str, str]:
        out = {"endpoint": self.endpoint, "field": self.field, "change": self.change, "detail": self.detail}
        return out | ({"count": str(self.count)} if self.count != 1 else {})


def _needs(capture: Capture, endpoint: str) -> EndpointNeeds:
    shape = capture.shape(endpoint)
    reads = capture.read_paths(endpoint)
    # A key the parser looked up but some baseline objects lack is optional to it (a last page's missing
    # `next`, a nullable extra): its absence from a live body is no drift. A `*` is any key of a map.
    needed = {p for p in reads if p and p[-1] != ANY_KEY and shape.in_every_object(p)}
    return EndpointNeeds(
        endpoint=endpoint,
        needed=frozenset(needed),
        known=frozenset(shape.paths),
        maps=frozenset(capture.normal_maps(endpoint)),
        kinds={p: frozenset(k) for p, k in shape.kinds.items()},
    )


def _compare(needs: EndpointNeeds, shape: Shape) -> list[FieldIssue]:
    issues: list[FieldIssue] = []
    endpoint = needs.endpoint
    body_before, body_now = needs.kinds.get((), frozenset()), shape.kinds.get((), set())
    if body_before and body_now and not body_before & body_now:
        detail = f"{'/'.join(sorted(body_before))} → {'/'.join(sorted(body_now))}"
        return [FieldIssue(endpoint, format_path(()), "type", detail)]  # nothing below it compares
    for path in sorted(needs.needed):
        if shape.objects[owner_of(path)] == 0:
            # No object here to hold the field: an empty list, or its owner is gone (reported on its own).
            continue
        if shape.keys[path] == 0:
            issues.append(FieldIssue(endpoint, format_path(path), "missing"))
            continue
        before = needs.kinds.get(path, frozenset()) - {"null"}
        now = shape.kinds.get(path, set()) - {"null"}
        if before and now and not before & now:
            detail = f"{'/'.join(sorted(before))} → {'/'.join(sorted(now))}"
            issues.append(FieldIssue(endpoint, format_path(path), "type", detail))
    new = shape.paths - needs.known
    for path in sorted(new):
        # Only the outermost new key: a new object's own keys are news of the same change.
        if not any(path[:i] in new for i in range(1, len(path))):
            issues.append(FieldIssue(endpoint, format_path(path), "new"))
    return issues


def schema_warnings(baseline: Baseline, responses: Capture | Mapping[str, Any]) -> list[FieldIssue]:
    """The schema drift of one fetch: `responses` is what `providers.schema.capture_json()` captured around
    the fetch, or the decoded bodies by endpoint (`"POST console.vast.ai/api/v0/bundles"`: body).

    Missing and retyped fields (`issue.drift`) first, then new ones. Endpoints the fetch did not reach are
    not judged. Cheap: no I/O, so a caller may run it after every scrape."""
    capture = responses if isinstance(responses, Capture) else Capture.of(responses.items())
    issues: list[FieldIssue] = []
    for endpoint, needs in sorted(baseline.endpoints.items()):
        if endpoint in capture.shapes:
            issues.extend(summarised(_compare(needs, capture.shape(endpoint, needs.maps))))
    return sorted(issues, key=lambda i: not i.drift)  # stable: drift first, each group in path order


# Per endpoint and kind of change, the issues kept one by one; the rest are one summary issue (a count and
# the first names). A hostile or broken answer with 100,000 unknown keys is then ~20 stored warnings and
# log lines, not 100,000 (and /v1/providers, which shows them, stays small).
MAX_ISSUES_PER_KIND = 20
SUMMARY_NAMES = 10


def summarised(issues: Sequence[FieldIssue], limit: int = MAX_ISSUES_PER_KIND) -> list[FieldIssue]:
    """`issues` with at most `limit` per (endpoint, change), the rest folded into one summary issue each."""
    groups: dict[tuple[str, str], list[FieldIssue]] = {}
    for issue in issues:
        groups.setdefault((issue.endpoint, issue.change), []).append(issue)
    out: list[FieldIssue] = []
    for (endpoint, change), group in groups.items():
        out.extend(group[:limit])
        rest = group[limit:]
        if rest:
            names = ", ".join(i.field for i in rest[:SUMMARY_NAMES]) + (", …" if len(rest) > SUMMARY_NAMES else "")
            detail = f"{len(rest):,} more {change} fields, first: {names}"
            out.append(FieldIssue(endpoint, f"(+{len(rest):,} more)", rest[0].change, detail[:1000], len(rest)))
    return out


# --- baseline ---------------------------------------------------------------------------------------


def _replay_credentials(provider: type[Provider]) -> dict[str, str]:
    # As a replayed scrape sends them: recorded secrets are "<redacted>", which matches any value.
    return {c: provider.demo_credentials.get(c, "replay") for c in provider.credentials}


async def _fetch(
    provider: type[Provider],
    transport: httpx.AsyncBaseTransport,
    *,
    credentials: Mapping[str, str],
    retries: int,
    backoff_base_s: float,
    timeout_s: float,
) -> ScrapeResult:
    """One fetch as a scrape makes it (tracker.pipeline.scraping): its own client, through fetch_offers."""
    async with httpx.AsyncClient(
        transport=transport, timeout=timeout_s, follow_redirects=False, headers={"user-agent": USER_AGENT}
    ) as client:
        ctx = FetchContext(client=client, credentials=dict(credentials), retries=retries, backoff_base_s=backoff_base_s)
        return await fetch_offers(provider, ctx)


async def learn_baseline(provider: type[Provider], cassette: Cassette | None = None) -> Baseline:
    """What `provider`'s parser needs, learned by running it over `cassette` (default: its bundled one)."""
    name = provider.name
    if provider.kind == ProviderKind.static_sheet:
        cassette = Cassette(name, [])  # a sheet makes no request
    elif cassette is None:
        try:
            cassette = Cassette.load(bundled_cassette(name))
        except CassetteError as exc:
            return Baseline(name, {}, frozenset(), 0, error=str(exc))
    try:
        with capture_json(trace=True) as capture:
            result = await _fetch(
                provider,
                ReplayTransport(cassette),
                credentials=_replay_credentials(provider),
                retries=3,  # bundled cassettes replay a 429 or 503 before the answer
                backoff_base_s=0.0,
                timeout_s=30.0,
            )
    except Exception as exc:  # a broken baseline must not stop the live check, only the comparison
        return Baseline(name, {}, frozenset(), 0, error=f"replaying the baseline failed: {_describe(exc)}")
    prepared = validate_batch(result, get_catalog(), Settings(), name)
    return Baseline(
        provider=name,
        endpoints={e: _needs(capture, e) for e in capture.endpoints()},
        unknown_names=frozenset(prepared.unknown),
        offers=len(result.offers),
    )


_baselines: dict[tuple[str, str], Baseline] = {}


async def baseline_for(provider: type[Provider]) -> Baseline:
    """`learn_baseline` over the bundled cassette, once per process and parser version."""
    key = (provider.name, provider.parser_version)
    if key not in _baselines:
        _baselines[key] = await learn_baseline(provider)
    return _baselines[key]


# --- (c) prices -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    n: int
    p10: float
    median: float
    p90: float

    @classmethod
    def of(cls, prices: Sequence[Decimal]) -> Spread:
        values = sorted(float(p) for p in prices)
        return cls(len(values), _quantile(values, 0.1), _quantile(values, 0.5), _quantile(values, 0.9))

    def as_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "p10": round(self.p10, 4), "median": round(self.median, 4), "p90": round(self.p90, 4)}


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default): defined for a single value too."""
    position = (len(values) - 1) * q
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


@dataclass(frozen=True)
class PriceMove:
    gpu: str
    pricing: str
    before: Spread  # the offers listed in the database
    now: Spread  # the fetched offers

    @property
    def ratio(self) -> float:
        return self.now.median / self.before.median if self.before.median else float("inf")

    @property
    def flagged(self) -> bool:
        return self.ratio > PRICE_MOVE_FACTOR or self.ratio < 1 / PRICE_MOVE_FACTOR

    def __str__(self) -> str:
        b, n = self.before, self.now
        return (
            f"price of {self.gpu} ({self.pricing}) moved ×{self.ratio:.2f}: median ${b.median:.2f} → ${n.median:.2f}"
            f" /GPU-hour, p10 ${b.p10:.2f} → ${n.p10:.2f}, p90 ${b.p90:.2f} → ${n.p90:.2f}"
            f" ({b.n} listed → {n.n} fetched)"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "pricing": self.pricing,
            "before": self.before.as_dict(),
            "now": self.now.as_dict(),
            "ratio": round(self.ratio, 4),
            "flagged": self.flagged,
        }


def _listed_prices(engine: Engine, provider: str) -> dict[tuple[str, str], list[Decimal]]:
    grouped: dict[tuple[str, str], list[Decimal]] = defaultdict(list)
    with session_scope(engine) as session:
        rows = session.execute(
            select(Offer.gpu_id, Offer.pricing, Offer.price_per_gpu_hour).where(
                Offer.provider == provider, Offer.delisted_at.is_(None)
            )
        )
        for gpu, pricing, price in rows:
            grouped[(gpu, pricing)].append(price)
    return grouped


def price_moves(
    listed: Mapping[tuple[str, str], Sequence[Decimal]], fetched: Iterable[ValidOffer]
) -> tuple[list[PriceMove], list[str], list[str]]:
    """Per (card, pricing) held on both sides: how the spread moved; then the cards only listed (gone) and
    only fetched (new), as "GPU (pricing)"."""
    now: dict[tuple[str, str], list[Decimal]] = defaultdict(list)
    for offer in fetched:
        now[(offer.gpu.id, offer.scraped.pricing.value)].append(offer.price_per_gpu_hour)
    moves = [PriceMove(k[0], k[1], Spread.of(listed[k]), Spread.of(now[k])) for k in sorted(set(listed) & set(now))]
    gone = [f"{g} ({p})" for g, p in sorted(set(listed) - set(now))]
    new = [f"{g} ({p})" for g, p in sorted(set(now) - set(listed))]
    return moves, gone, new


# --- one provider -----------------------------------------------------------------------------------


_FETCH_FAILED = "fetch failed: "


@dataclass
class ProviderDrift:
    provider: str
    source: str  # live | replay
    offers: int = 0
    error: str | None = None  # (d): the fetch failed
    skipped: str | None = None  # not checked at all (no credentials)
    schema: list[FieldIssue] = field(default_factory=list)
    endpoints: list[str] = field(default_factory=list)  # compared with the baseline
    schema_note: str | None = None  # why the schema was not (fully) compared
    unknown_names: dict[str, str] = field(default_factory=dict)  # (b), new since the baseline: name → why
    known_unknown_names: list[str] = field(default_factory=list)  # unresolved in the baseline too
    prices: list[PriceMove] = field(default_factory=list)
    cards_gone: list[str] = field(default_factory=list)
    cards_new: list[str] = field(default_factory=list)
    price_note: str | None = None
    empty: bool = False  # fetched no offers where the baseline has some
    dropped: list[str] = field(default_factory=list)  # malformed objects the adapter dropped, with reasons

    @property
    def drifted(self) -> bool:
        """A finding about the API itself. A fetch that failed on its own (offline, a timeout) says nothing about
        drift: that provider is "failed", counted apart, not "drifted"."""
        return self.skipped is None and any(not line.startswith(_FETCH_FAILED) for line in self.problems())

    @property
    def status(self) -> str:
        if self.skipped is not None:
            return "skipped"
        if self.error is not None:
            return "failed"
        return "drifted" if self.drifted else "ok"

    def problems(self) -> list[str]:
        """One line per finding that makes this provider drifted."""
        lines = [str(i) for i in self.schema if i.drift]
        lines += [f"unknown GPU name {name!r}: {why}" for name, why in sorted(self.unknown_names.items())]
        lines += [str(m) for m in self.prices if m.flagged]
        if self.empty:
            lines.append("no offers fetched (the baseline has some)")
        if self.error is not None:
            lines.append(f"{_FETCH_FAILED}{self.error}")
        return lines

    def notes(self) -> list[str]:
        """Findings that are not drift: new fields, cards come and gone, what could not be compared."""
        lines = [str(i) for i in self.schema if not i.drift]
        lines += [n for n in (self.schema_note, self.price_note) if n]
        if self.dropped:
            shown = "; ".join(self.dropped[:5]) + (" …" if len(self.dropped) > 5 else "")
            lines.append(f"{len(self.dropped)} malformed object(s) dropped: {shown}")
        if self.cards_gone:
            lines.append(f"listed but not fetched: {', '.join(self.cards_gone)}")
        if self.cards_new:
            lines.append(f"fetched but not listed: {', '.join(self.cards_new)}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "source": self.source,
            "status": self.status,
            "drifted": self.drifted,
            "offers": self.offers,
            "error": self.error,
            "skipped": self.skipped,
            "dropped": {"count": len(self.dropped), "first": self.dropped[:20]},
            "schema": {
                "endpoints": self.endpoints,
                "note": self.schema_note,
                "missing": [i.as_dict() for i in self.schema if i.change == "missing"],
                "changed_type": [i.as_dict() for i in self.schema if i.change == "type"],
                "new": [i.as_dict() for i in self.schema if i.change == "new"],
            },
            "unknown_names": {"new": self.unknown_names, "known": self.known_unknown_names},
            "prices": {
                "note": self.price_note,
                "factor": PRICE_MOVE_FACTOR,
                "moves": [m.as_dict() for m in self.prices],
                "gone": self.cards_gone,
                "new": self.cards_new,
            },
            "problems": self.problems(),
            "notes": self.notes(),
        }


def _describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, ProviderError) else f"{type(exc).__name__}: {exc}"


async def check_provider(
    provider: type[Provider],
    transport: httpx.AsyncBaseTransport,
    *,
    credentials: Mapping[str, str],
    settings: Settings,
    engine: Engine | None = None,
    source: str = "live",
    baseline: Baseline | None = None,
) -> ProviderDrift:
    """Fetch `provider` through `transport` and compare it with its baseline (and, given `engine`, with the
    offers the database lists). Never raises for what the provider answers: that is the report."""
    baseline = baseline or await baseline_for(provider)
    report = ProviderDrift(provider.name, source)
    fetch = _fetch(
        provider,
        transport,
        credentials=credentials,
        retries=settings.http_retries,
        backoff_base_s=0.5 if source == "live" else 0.0,  # a recorded 429 needs no real waiting
        timeout_s=settings.http_timeout_s,
    )
    result: ScrapeResult | None = None
    with capture_json() as capture:
        try:
            result = await asyncio.wait_for(fetch, timeout=settings.scrape_timeout_s)
        except MissingCredentials as exc:
            report.skipped = str(exc)
            return report
        except TimeoutError:
            report.error = f"timed out after {settings.scrape_timeout_s:.0f}s"
        except Exception as exc:  # a parser bug is a finding too, not a crash of the check
            report.error = _describe(exc)

    # (a) compared even when the fetch failed: the bodies decoded before the failure often say why.
    if baseline.error:
        report.schema_note = f"schema not compared: {baseline.error}"
    elif not baseline.endpoints:
        report.schema_note = (
            "schema not compared: a static sheet has no upstream response"
            if provider.kind == ProviderKind.static_sheet
            else "schema not compared: the adapter decodes no JSON through providers.http"
        )
    else:
        report.schema = schema_warnings(baseline, capture)
        report.endpoints = sorted(e for e in baseline.endpoints if e in capture.shapes)
        unreached = sorted(set(baseline.endpoints) - set(capture.shapes))
        if unreached:
            report.schema_note = f"not reached, so not compared: {', '.join(unreached)}"
    if result is None:
        return report

    report.offers = len(result.offers)
    report.dropped = [r for r in result.skipped if DROP_MARK in r]
    report.empty = not result.offers and baseline.offers > 0
    rates = None
    if engine is not None:  # offers quoted in another currency compare in USD at the stored rates
        with session_scope(engine) as session:
            rates = RateBook.load(session, {o.currency for o in result.offers}, utcnow(), max_age=None)
    prepared = validate_batch(result, get_catalog(), settings, provider.name, rates)
    # (b) a name the bundled cassette already leaves unresolved is known, not news.
    report.unknown_names = {n: why for n, why in prepared.unknown.items() if n not in baseline.unknown_names}
    report.known_unknown_names = sorted(n for n in prepared.unknown if n in baseline.unknown_names)
    # (c)
    if engine is None:
        report.price_note = "prices not compared: no database"
        return report
    listed = _listed_prices(engine, provider.name)
    if not listed:
        report.price_note = "prices not compared: the database lists no offers of this provider yet"
        return report
    report.prices, report.cards_gone, report.cards_new = price_moves(listed, prepared.valid)
    return report


# --- several providers ------------------------------------------------------------------------------


def _live_transport(provider: type[Provider]) -> httpx.AsyncBaseTransport:
    return httpx.AsyncHTTPTransport(retries=0)  # retries are providers.http's, with backoff and Retry-After


async def run_doctor(
    names: Sequence[str],
    *,
    settings: Settings,
    engine: Engine | None,
    replay: Path | None = None,
    transport: TransportFactory | None = None,
) -> list[ProviderDrift]:
    """Check `names` (default: every provider): live, or `replay` (one provider) from a cassette; with
    `transport` a test injects its own per-provider transport for the "live" fetch.

    Raises UnknownProvider, CassetteError or ValueError on bad input, before anything is fetched."""
    if replay is not None:
        cassette = Cassette.load(replay)
        chosen = list(names) or ([cassette.provider] if cassette.provider else [])
        if len(chosen) != 1:
            raise ValueError("--replay takes exactly one provider (or a cassette naming its provider)")
        provider = get_provider(chosen[0])
        if cassette.provider and cassette.provider != provider.name:
            raise ValueError(f"{replay} is a cassette of {cassette.provider}, not of {provider.name}")
        return [
            await check_provider(
                provider,
                ReplayTransport(cassette),
                credentials=_replay_credentials(provider),
                settings=settings,
                engine=engine,
                source="replay",
            )
        ]
    providers = [get_provider(n) for n in names] if names else list(all_providers().values())
    make = transport or _live_transport
    # Each provider has its own client, as in a scrape; a few at a time keeps a laptop's uplink usable.
    gate = asyncio.Semaphore(max(1, min(settings.max_connections, 8)))

    async def one(provider: type[Provider]) -> ProviderDrift:
        credentials, missing = credentials_of(provider, settings)
        if missing:
            return ProviderDrift(provider.name, "live", skipped=f"no credentials (set {', '.join(missing)})")
        async with gate:
            return await check_provider(
                provider, make(provider), credentials=credentials, settings=settings, engine=engine
            )

    reports = await asyncio.gather(*(one(p) for p in providers))
    return sorted(reports, key=lambda r: r.provider)
