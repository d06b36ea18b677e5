"""The one way to run a provider's fetch: every caller (the scraping pipeline above all) goes through
`fetch_offers`, so what each adapter would otherwise have to remember is done here once.

* The provider's own `max_response_bytes` is put in the context, so every body read through
  `providers.http` stops there; so is a `RequestPacer` for its documented `requests_per_minute`, so
  every request of the fetch is spaced under it.
* An aggregator's offers (`ScrapedOffer.upstream` set) are labelled `via` it, with their upstream, in
  their attributes (`labelled_aggregated`).
* Every credential in the context, in any form a server may echo it in (`providers.http.secret_forms`:
  URL-encoded, base64 of Basic-auth pairs, …), is blanked out of whatever the fetch raises. A run's error
  is shown to anyone who can read `GET /v1/providers`, and an upstream error body that quotes the key it
  was sent is common; so is a parser bug whose KeyError holds a value it was handed.

Secrets an adapter derives itself (an OAuth access token) are not in the context: the adapter still scrubs
those (`providers.http.redacting_secrets`).
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import replace

from providers.contract import FetchContext, Provider, ProviderError, ScrapeResult
from providers.http import REDACTED, RequestPacer, scrub_secrets, secret_forms

__all__ = ["fetch_offers", "labelled_aggregated", "scrub_exception"]


async def fetch_offers(provider: type[Provider], ctx: FetchContext) -> ScrapeResult:
    """`provider().fetch(ctx)` under the provider's response-size limit, with every credential of `ctx`
    scrubbed from any exception it raises.

    The exception keeps its type and traceback (a ProviderError stays one, MissingCredentials too, a parser
    bug stays e.g. a KeyError), so callers report it as before; only its text changes."""
    pacer = ctx.pacer
    if pacer is None and provider.requests_per_minute:
        # Replay (no backoff: recorded 429s need no waiting) keeps the spacing on a virtual clock.
        pacer = RequestPacer(provider.requests_per_minute, real_time=ctx.backoff_base_s > 0)
    ctx = replace(ctx, max_response_bytes=provider.max_response_bytes, pacer=pacer)
    forms = secret_forms(ctx.credentials.values())
    try:
        return labelled_aggregated(provider, await provider().fetch(ctx))
    except Exception as exc:
        cleaned = scrub_exception(exc, forms)
        if cleaned is exc:
            raise
        raise cleaned from None


def labelled_aggregated(provider: type[Provider], result: ScrapeResult) -> ScrapeResult:
    """An aggregator's offers carry `via` (the aggregator) and `upstream` (whose machine it is) in their
    attributes, where every reader finds them (`tracker.market.aggregated`): adapters set only
    `ScrapedOffer.upstream`. An upstream that is the adapter itself is its own machine, not a resale."""
    for offer in result.offers:
        if offer.upstream == provider.name:
            offer.upstream = None
        if offer.upstream:
            offer.attributes = offer.attributes | {"via": provider.name, "upstream": offer.upstream}
    return result


def scrub_exception(exc: Exception, forms: list[str]) -> Exception:
    """`exc` with `forms` blanked out of its text, and out of the exceptions chained to it (a logged traceback
    prints those too), changed in place. When an exception's text does not come from its arguments (a
    custom `__str__`), so that blanking them is not enough: chained ones are cut off, and in place of `exc`
    itself comes a ProviderError carrying its type name and scrubbed text."""
    if not forms:
        return exc
    chain_clean = True
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        _scrub_in_place(current, forms)
        if current is not exc and _leaks(current, forms):
            chain_clean = False
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        todo.extend(getattr(current, "exceptions", ()))  # an ExceptionGroup's members
    if not chain_clean:
        exc.__cause__ = exc.__context__ = None
        exc.__suppress_context__ = True
    if not _leaks(exc, forms):
        return exc
    text = scrub_secrets(_text(exc), forms)
    if isinstance(exc, ProviderError):
        return type(exc)(text) if type(exc).__init__ is ProviderError.__init__ else ProviderError(text)
    return ProviderError(f"{type(exc).__name__}: {text}")


def _scrub_in_place(exc: BaseException, forms: list[str]) -> None:
    # An exception type may refuse new args: its text is checked afterwards all the same.
    with suppress(AttributeError, TypeError):
        exc.args = tuple(scrub_secrets(a, forms) if isinstance(a, str) else a for a in exc.args)
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        notes[:] = [scrub_secrets(n, forms) if isinstance(n, str) else n for n in notes]


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a broken __str__ must not hide the failure it describes
        return REDACTED


def _leaks(exc: BaseException, forms: list[str]) -> bool:
    text = _text(exc)
    notes = getattr(exc, "__notes__", None) or []
    return any(form in part for part in [text, *(n for n in notes if isinstance(n, str))] for form in forms)
