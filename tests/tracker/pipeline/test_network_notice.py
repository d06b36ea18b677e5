"""A machine without network is told so once, not once per provider; a connect failure is told apart from
a provider's bad answer."""

from __future__ import annotations

import logging

import httpx
import pytest

from providers.contract import FetchContext, ProviderError, ProviderUnreachable
from providers.http import get_json
from tracker.ingest.batch import IngestReport
from tracker.pipeline.scraping import UNREACHABLE, _NetworkNotice
from tracker.storage.ledger import RunStatus


def _down(name: str) -> IngestReport:
    return IngestReport(provider=name, run_id=None, status=RunStatus.failed, error=f"{UNREACHABLE}ConnectError")


def _ok(name: str) -> IngestReport:
    return IngestReport(provider=name, run_id=None, status=RunStatus.ok)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_no_network_is_said_once_and_its_end_too(caplog: pytest.LogCaptureFixture) -> None:
    notice = _NetworkNotice()
    with caplog.at_level(logging.INFO, logger="tracker.pipeline.scraping"):
        for name in ("vastai", "runpod", "lium", "vultr", "oci"):
            notice.record([_down(name)])
        assert len(_warnings(caplog)) == 1
        assert "vastai, runpod, lium" in _warnings(caplog)[0] and "DEMO=1" in _warnings(caplog)[0]
        notice.record([_ok("modal")])  # a price sheet needs no network: it says nothing about it
        assert len(_warnings(caplog)) == 1
        notice.record([_ok("lambdalabs")])
        assert "reachable again (lambdalabs answered)" in _warnings(caplog)[-1]


def test_one_unreachable_provider_among_reachable_ones_is_no_outage(caplog: pytest.LogCaptureFixture) -> None:
    notice = _NetworkNotice()
    with caplog.at_level(logging.INFO, logger="tracker.pipeline.scraping"):
        notice.record([_down("vastai"), _ok("runpod"), _down("lium"), _ok("vultr"), _down("oci")])
    assert _warnings(caplog) == []


async def _fetch(handler) -> None:
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        await get_json(FetchContext(client=client, credentials={}, retries=2, backoff_base_s=0.0), "https://x.test/")


async def test_a_connect_failure_on_every_attempt_is_unreachable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(ProviderUnreachable, match="gave up after 3 attempts: ConnectError"):
        await _fetch(refuse)


async def test_a_provider_that_answers_badly_is_not_unreachable() -> None:
    calls = 0

    def flaky(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(503, request=request)

    with pytest.raises(ProviderError) as caught:
        await _fetch(flaky)
    assert not isinstance(caught.value, ProviderUnreachable)
