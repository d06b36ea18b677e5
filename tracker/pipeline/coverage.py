"""What each provider covers, from the registry and its bundled sample: the README's providers table.

The table is generated, never written by hand, so it cannot drift from the code: kind and credentials
come from the adapter's declarations, the data terms (where they are, whether the prices may be republished,
as read on a day) from `providers/terms.toml`, the pricing types and currencies from what the adapter makes of its
bundled cassette (or rate sheet) — the same offline replay as `scrape --demo`, without a database.
`tests/tracker/pipeline/test_coverage.py` fails when the README's copy differs from this one;
`python -m tracker.pipeline.coverage --write` rewrites it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.contract import FetchContext, Pricing, Provider, ProviderKind, ScrapeResult
from providers.fetching import fetch_offers
from providers.parsing import term_hours
from providers.registry import PROVIDERS
from providers.terms import terms_for

__all__ = ["Coverage", "coverage", "markdown_table", "readme_with_table", "sample"]

RETRIES = 3
START, END = "<!-- providers-table:start -->", "<!-- providers-table:end -->"


@dataclass(frozen=True)
class Coverage:
    name: str
    title: str
    kind: str
    auth: str
    pricing: tuple[str, ...]
    currencies: tuple[str, ...]
    offers: int
    terms_url: str = ""
    republish: str = "unknown"
    terms_read_on: str = ""


def _no_network(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError(f"no network for samples: {request.url}")


async def sample(provider: type[Provider]) -> ScrapeResult:
    """The offers `provider` makes of its bundled sample, offline (no request leaves this process)."""
    cassette = None if provider.kind == ProviderKind.static_sheet else Cassette.load(bundled_cassette(provider.name))
    transport = ReplayTransport(cassette) if cassette is not None else httpx.MockTransport(_no_network)
    credentials = {c: provider.demo_credentials.get(c, "replay") for c in provider.credentials}
    async with httpx.AsyncClient(transport=transport) as client:
        # Cassettes record retries (a 429, then the answer): allow as many as the worker does, without waits.
        ctx = FetchContext(client=client, credentials=credentials, retries=RETRIES, backoff_base_s=0.0)
        return await fetch_offers(provider, ctx)


def _auth(provider: type[Provider]) -> str:
    if provider.credentials:
        return "key"
    return "optional key" if provider.optional_credentials else "none"


def _pricing(result: ScrapeResult) -> tuple[str, ...]:
    kinds = {o.pricing for o in result.offers}
    terms = sorted(
        {o.reserved_term for o in result.offers if o.pricing == Pricing.reserved and o.reserved_term}, key=term_hours
    )
    out = [p.value for p in Pricing if p in kinds and p != Pricing.reserved]
    if Pricing.reserved in kinds:
        out.append(f"reserved ({', '.join(terms)})" if terms else "reserved")
    return tuple(out)


async def _one(provider: type[Provider]) -> Coverage:
    result = await sample(provider)
    terms = terms_for(provider.name)
    return Coverage(
        name=provider.name,
        title=provider.title,
        kind=provider.kind.value,
        auth=_auth(provider),
        pricing=_pricing(result),
        currencies=tuple(sorted({o.currency for o in result.offers})),
        offers=len(result.offers),
        terms_url=terms.url if terms else "",
        republish=terms.republish.value if terms else "unknown",
        terms_read_on=terms.read_on.isoformat() if terms else "",
    )


def coverage(providers: Sequence[type[Provider]] = PROVIDERS) -> list[Coverage]:
    """One row per provider, in registry order."""

    async def run() -> list[Coverage]:
        return list(await asyncio.gather(*(_one(p) for p in providers)))

    return asyncio.run(run())


def markdown_table(rows: Sequence[Coverage]) -> str:
    """The README's table, between its markers."""
    lines = [
        START,
        "| provider | name | kind | credentials | pricing | currency | sample offers | terms | republish |",
        "|---|---|---|---|---|---|---:|---|---|",
    ]
    for r in rows:
        pricing = ", ".join(r.pricing) or "—"
        currencies = ", ".join(r.currencies) or "—"
        terms = f"[terms]({r.terms_url})" if r.terms_url else "not found"
        republish = f"{r.republish} (as of {r.terms_read_on})" if r.terms_read_on else r.republish
        lines.append(
            f"| {r.title} | `{r.name}` | {r.kind} | {r.auth} | {pricing} | {currencies} | {r.offers} | {terms} "
            f"| {republish} |"
        )
    lines.append(END)
    return "\n".join(lines)


def readme_with_table(readme: str, table: str) -> str:
    """`readme` with the text between the table's markers replaced by `table`."""
    start, end = readme.find(START), readme.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no {START} … {END} block")
    return readme[:start] + table + readme[end + len(END) :]


def main(argv: Sequence[str]) -> int:
    readme = Path("README.md")
    table = markdown_table(coverage())
    if "--write" in argv:
        readme.write_text(readme_with_table(readme.read_text(encoding="utf-8"), table), encoding="utf-8")
    else:
        print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
