"""No credential reaches a run's error: `providers.fetching.fetch_offers` scrubs every credential in the
context, and the forms a server may echo it in, from whatever a fetch raises (the run's error is shown by
the unauthenticated `GET /v1/providers`). Checked for every provider that takes credentials, whatever it
does itself."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import httpx
import pytest
from sqlalchemy import select

from providers.adapters.runpod import API_KEY as RUNPOD_KEY
from providers.adapters.runpod import RunPod
from providers.cassette import Cassette, bundled_cassette
from providers.contract import FetchContext, MissingCredentials, Provider, ProviderError, ProviderKind, ScrapeResult
from providers.fetching import fetch_offers
from providers.http import REDACTED, error_snippet, secret_forms
from providers.registry import all_providers
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.storage.engine import session_scope
from tracker.storage.tables import ScrapeRun

# Credentials a provider reads when present without declaring them (so runs never skip for want of them).
OPTIONAL_CREDENTIALS: dict[str, tuple[str, ...]] = {RunPod.name: (RUNPOD_KEY,)}
WITH_CREDENTIALS = {
    name: cls for name, cls in all_providers().items() if cls.credentials or name in OPTIONAL_CREDENTIALS
}


def test_every_provider_with_credentials_is_checked():
    declared = {name for name, cls in all_providers().items() if cls.credentials}
    assert declared <= set(WITH_CREDENTIALS)
    # the adapters that had no scrubbing of their own (issue #18) are among them
    assert {"gcp", "primeintellect", "shadeform", "tensordock", "runpod"} <= set(WITH_CREDENTIALS)


def credentials_for(cls: type[Provider]) -> dict[str, str]:
    """A distinct value per credential, with characters that URL-encoding and JSON change."""
    names = cls.credentials or OPTIONAL_CREDENTIALS[cls.name]
    return {name: f"Zq8/x+Lw=Tp&Kd Vr:{i}Qm{i}#9Fj" for i, name in enumerate(names)}


def echoes(secrets: list[str], request: httpx.Request) -> str:
    """An error body quoting the secrets as a careless server might: as sent (the request's URL, headers
    and body included), URL-encoded, JSON-escaped and as Basic credentials."""
    lines = [f"invalid key {s}; got {quote(s, safe='')} / {quote_plus(s)} / {json.dumps(s)}" for s in secrets]
    for user in ["", *secrets]:
        for password in secrets:
            basic = base64.b64encode(f"{user}:{password}".encode()).decode()
            lines.append(f"Authorization: Basic {basic}")
    lines.append(f"you sent {request.url} with {dict(request.headers)} and {request.content.decode()}")
    return "\n".join(lines)


def leaks(message: str, secrets: list[str]) -> list[str]:
    """Any secret in `message`: whole, encoded, or a run of 8 of its characters (a cut-short echo)."""
    found = []
    for secret in secrets:
        for form in [secret, quote(secret, safe=""), quote_plus(secret), base64.b64encode(secret.encode()).decode()]:
            found += [form[i : i + 8] for i in range(len(form) - 7) if form[i : i + 8] in message]
    return found


def run(cls: type[Provider], handler: Callable[[httpx.Request], httpx.Response], credentials: dict[str, str]) -> str:
    async def go() -> str:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            ctx = FetchContext(client=client, credentials=credentials, retries=1, backoff_base_s=0)
            with pytest.raises(ProviderError) as info:
                await fetch_offers(cls, ctx)
            return str(info.value)

    return asyncio.run(go())


@pytest.mark.parametrize("status", [401, 403, 500])
@pytest.mark.parametrize("name", sorted(WITH_CREDENTIALS))
def test_error_echoing_the_credentials_is_scrubbed(name, status):
    cls = WITH_CREDENTIALS[name]
    credentials = credentials_for(cls)
    secrets = list(credentials.values())

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, text=echoes(secrets, request))

    message = run(cls, handler, credentials)
    assert f"HTTP {status}" in message, message
    assert not leaks(message, secrets), message


@pytest.mark.parametrize("name", sorted(WITH_CREDENTIALS))
def test_echo_cut_short_by_the_snippet_is_scrubbed(name):
    """A key that straddles the point where the error snippet is cut must not survive as its first half."""
    cls = WITH_CREDENTIALS[name]
    credentials = credentials_for(cls)
    secrets = list(credentials.values())

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, text="x" * 190 + secrets[0] + " rejected")

    message = run(cls, handler, credentials)
    assert "HTTP 401" in message and not leaks(message, secrets), message


class Crashing(Provider):
    """A parser bug: an unexpected exception quoting a value it was handed."""

    name = "crashing"
    title = "Crashing"
    kind = ProviderKind.cloud
    credentials = ("CRASH_KEY",)
    raises: Callable[[str], Exception] = KeyError

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key = ctx.secret("CRASH_KEY")
        try:
            empty: dict[str, str] = {}
            empty[f"token={quote(key, safe='')}"]
        except KeyError as cause:
            raise type(self).raises(f"no such field {key!r}") from cause
        return ScrapeResult()


class OddError(Exception):
    """Its text does not come from its args, so blanking those is not enough."""

    def __init__(self, message: str) -> None:
        super().__init__("odd")
        self.detail = message

    def __str__(self) -> str:
        return self.detail


def crash(raises: Callable[[str], Exception], key: str) -> BaseException:
    provider = type("Crash", (Crashing,), {"raises": staticmethod(raises)})

    async def go() -> BaseException:
        async with httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(500))) as client:
            try:
                await fetch_offers(provider, FetchContext(client=client, credentials={"CRASH_KEY": key}))
            except Exception as exc:
                return exc
        raise AssertionError("the fetch did not fail")

    return asyncio.run(go())


def test_unexpected_exception_is_scrubbed_and_keeps_its_type():
    key = "sk-live/Abc+123=Xyz"
    exc = crash(KeyError, key)
    assert type(exc) is KeyError  # the runner still reports it as the bug it is, traceback and all
    assert REDACTED in str(exc) and not leaks(str(exc), [key]), str(exc)
    cause = exc.__cause__
    assert isinstance(cause, KeyError) and not leaks(str(cause), [key]), cause  # a logged traceback shows it


def test_exception_with_its_own_str_is_replaced_by_a_scrubbed_provider_error():
    key = "sk-live/Abc+123=Xyz"
    exc = crash(OddError, key)
    assert isinstance(exc, ProviderError) and str(exc).startswith("OddError: no such field")
    assert not leaks(str(exc), [key]), str(exc)
    assert exc.__cause__ is None


def test_missing_credentials_and_clean_errors_pass_through_unchanged():
    class Bare(Crashing):
        async def fetch(self, ctx: FetchContext) -> ScrapeResult:
            ctx.secret("OTHER")
            return ScrapeResult()

    async def go() -> None:
        async with httpx.AsyncClient() as client:
            with pytest.raises(MissingCredentials, match="credential OTHER is not configured"):
                await fetch_offers(Bare, FetchContext(client=client, credentials={"CRASH_KEY": "k-123456789"}))

    asyncio.run(go())


def test_secret_forms_cover_encodings_and_any_basic_user():
    key = "Zq8/x+Lw=Tp&Kd Vr"
    forms = secret_forms([key, ""])
    assert {key, quote(key, safe=""), quote_plus(key), "Zq8%2fx%2bLw%3dTp%26Kd%20Vr"} <= set(forms)
    text = " ".join(base64.b64encode(f"{user}:{key}".encode()).decode() for user in ("api", "me", "someone-else", ""))
    for form in forms:
        text = text.replace(form, REDACTED)
    assert text.count(REDACTED) == 4
    assert len(forms) == len(set(forms)) and forms == sorted(forms, key=len, reverse=True)


def test_error_snippet_reads_little_and_scrubs_before_cutting():
    key = "Zq8/x+Lw=Tp&Kd Vr"
    sent = 0

    async def body():
        nonlocal sent
        yield ("y" * 195 + key).encode()
        while sent < 2**30:  # never consumed: only the start of an error body is read
            sent += 2**16
            yield b"z" * 2**16

    async def go() -> str:
        transport = httpx.MockTransport(lambda r: httpx.Response(401, content=body()))
        async with httpx.AsyncClient(transport=transport) as c, c.stream("GET", "https://api.example/x") as response:
            return await error_snippet(response, FetchContext(client=c, credentials={"K": key}))

    snippet = asyncio.run(go())
    assert snippet.startswith("y" * 195) and not leaks(snippet, [key]) and sent <= 2**16


def test_pipeline_records_the_scrubbed_error(engine, settings, clock):
    """Through the scraping runner: the ledger row (what `GET /v1/providers` shows) holds no credential.
    A replay run's credentials are the provider's demo values, echoed here by a recorded 401."""
    cls = all_providers()["gcp"]
    secret = cls.demo_credentials.get("GCP_API_KEY", "replay")
    raw = json.loads(bundled_cassette(cls.name).read_text())
    for interaction in raw["interactions"]:
        interaction["response"] = {"status": 401, "headers": {}, "text": f"API key not valid: {secret}"}
    job = ScrapeJob(cls, "replay", Cassette.from_json(raw))
    (report,) = asyncio.run(run_scrape([job], engine, settings, clock=clock))
    assert report.status == "failed" and report.error and "HTTP 401" in report.error, report
    assert secret not in report.error, report.error
    with session_scope(engine) as session:
        run = session.scalar(select(ScrapeRun).where(ScrapeRun.provider == cls.name))
        assert run is not None and run.error == report.error
