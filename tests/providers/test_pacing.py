"""A provider's documented rate limit is respected: `providers.fetching.fetch_offers` gives the fetch a
`RequestPacer` for `Provider.requests_per_minute`, and `providers.http.request` spaces every request
(retries included) at least 60 / rpm seconds apart. Replay spaces them on a virtual clock: no real sleep."""

from __future__ import annotations

import asyncio
import itertools
from typing import ClassVar

import httpx
import pytest

from providers.contract import FetchContext, Provider, ProviderKind, ScrapeResult
from providers.fetching import fetch_offers
from providers.http import RequestPacer, get_json
from providers.registry import all_providers


class FakeClock:
    """A monotonic clock that only moves when something sleeps on it."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_pacer_spaces_back_to_back_requests():
    clock = FakeClock()
    pacer = RequestPacer(60, clock=clock, sleep=clock.sleep)  # one a second

    async def go() -> list[float]:
        waits = [await pacer.wait() for _ in range(3)]
        clock.now += 5  # a quiet spell: the next request owes nothing
        return [*waits, await pacer.wait()]

    assert asyncio.run(go()) == [0.0, 1.0, 1.0, 0.0]
    assert clock.sleeps == [1.0, 1.0] and pacer.requests == 4 and pacer.waited_s == 2.0


def test_pacer_gives_concurrent_requests_distinct_slots():
    slept: list[float] = []

    async def record(seconds: float) -> None:  # the clock stands still: every claim sees the same instant
        slept.append(seconds)

    pacer = RequestPacer(120, clock=lambda: 100.0, sleep=record)  # every half second

    async def go() -> list[float]:
        return list(await asyncio.gather(*(pacer.wait() for _ in range(4))))

    assert sorted(asyncio.run(go())) == [0.0, 0.5, 1.0, 1.5]
    assert sorted(slept) == [0.5, 1.0, 1.5]


def test_replay_pacer_never_sleeps_but_keeps_the_schedule():
    async def refuse(seconds: float) -> None:
        raise AssertionError("replay must not sleep")

    pacer = RequestPacer(30, real_time=False, sleep=refuse)

    async def go() -> list[float]:
        return [await pacer.wait() for _ in range(5)]

    assert asyncio.run(go()) == [0.0, 2.0, 2.0, 2.0, 2.0]
    assert pacer.waited_s == 8.0  # what a live walk of 5 pages would have waited


def test_a_limit_must_be_positive():
    with pytest.raises(ValueError, match="requests_per_minute"):
        RequestPacer(0)


class Paged(Provider):
    """Three pages, one request each, under a documented 120 requests a minute."""

    name = "paged-test"
    title = "Paged (test)"
    kind = ProviderKind.marketplace
    requests_per_minute: ClassVar[float | None] = 120
    seen: ClassVar[list[FetchContext]] = []

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        type(self).seen.append(ctx)
        for page in range(3):
            await get_json(ctx, "https://api.example.test/offers", params={"page": page})
        return ScrapeResult()


def _client(times: list[float], clock: FakeClock, statuses: list[int]) -> httpx.AsyncClient:
    def answer(request: httpx.Request) -> httpx.Response:
        times.append(clock.now)
        return httpx.Response(statuses.pop(0) if statuses else 200, json={})

    return httpx.AsyncClient(transport=httpx.MockTransport(answer))


def _run(
    ctx_args: dict[str, float], statuses: list[int], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[float], FakeClock]:
    clock = FakeClock()
    times: list[float] = []
    monkeypatch.setattr("providers.pacing.time.monotonic", clock)
    monkeypatch.setattr("providers.pacing.asyncio.sleep", clock.sleep)
    Paged.seen.clear()

    async def go() -> None:
        async with _client(times, clock, statuses) as client:
            await fetch_offers(Paged, FetchContext(client=client, **ctx_args))  # type: ignore[arg-type]

    asyncio.run(go())
    return times, clock


def test_live_fetch_spaces_its_requests(monkeypatch):
    times, _ = _run({"backoff_base_s": 0.5}, [], monkeypatch)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(times) == 3 and all(g >= 0.5 for g in gaps), gaps  # 60 / 120 rpm
    pacer = Paged.seen[0].pacer
    assert pacer is not None and pacer.real_time and pacer.requests == 3


def test_retries_count_against_the_limit(monkeypatch):
    # backoff 0.001 s: far under the pacing interval, so the spacing seen is the pacer's, not the backoff's
    times, _ = _run({"backoff_base_s": 0.001}, [503], monkeypatch)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(times) == 4 and all(g >= 0.5 for g in gaps), gaps


def test_replay_fetch_spaces_on_a_virtual_clock(monkeypatch):
    times, clock = _run({"backoff_base_s": 0.0}, [], monkeypatch)  # replay: no backoff, no real waiting
    assert len(times) == 3 and clock.sleeps == []
    pacer = Paged.seen[0].pacer
    assert pacer is not None and not pacer.real_time and pacer.waited_s == 1.0


def test_documented_limits_are_positive():
    for name, cls in all_providers().items():
        assert cls.requests_per_minute is None or cls.requests_per_minute > 0, name
