"""Freshness per provider kind: every adapter is scraped at its kind's cadence — marketplaces every 10
minutes, clouds hourly, rate sheets daily (`providers.contract.default_interval_for`) — and the worker
and the freshness rule use that same interval unless TRACKER_INTERVALS overrides it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from providers.contract import FetchContext, Provider, ProviderKind, ScrapeResult, default_interval_for
from providers.registry import all_providers
from tracker.config import Settings
from tracker.market import freshness

CADENCE = {
    ProviderKind.marketplace: timedelta(minutes=10),
    ProviderKind.cloud: timedelta(hours=1),
    ProviderKind.static_sheet: timedelta(days=1),
}


def test_the_cadence_per_kind():
    assert {kind: default_interval_for(kind) for kind in ProviderKind} == CADENCE


def test_an_adapter_takes_its_kinds_cadence_unless_it_states_its_own():
    class Market(Provider):
        name, title, kind = "m", "M", ProviderKind.marketplace

        async def fetch(self, ctx: FetchContext) -> ScrapeResult:
            raise NotImplementedError

    class Slow(Market):
        default_interval = timedelta(hours=6)

    class SlowCloud(Slow):
        kind = ProviderKind.cloud  # a subclass that changes the kind takes that kind's cadence

    assert Market.default_interval == timedelta(minutes=10)
    assert Slow.default_interval == timedelta(hours=6)
    assert SlowCloud.default_interval == timedelta(hours=1)


@pytest.fixture
def plain(tmp_path) -> Settings:
    """Settings with no database: the rule reads only intervals and TRACKER_STALE_AFTER."""
    return Settings(data_dir=tmp_path)


@pytest.mark.parametrize("name", sorted(all_providers()))
def test_every_adapter_keeps_its_kinds_cadence(name, plain):
    settings = plain
    cls = all_providers()[name]
    assert cls.default_interval == CADENCE[cls.kind], f"{name} ({cls.kind.value}) every {cls.default_interval}"
    assert freshness.scrape_interval(name, settings) == CADENCE[cls.kind]
    assert freshness.window(name, settings) == max(settings.stale_after, 3 * CADENCE[cls.kind])
    override = settings.model_copy(update={"intervals": {name: 120}})
    assert freshness.scrape_interval(name, override) == timedelta(seconds=120)
