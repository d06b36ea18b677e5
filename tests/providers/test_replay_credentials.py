"""`tests.factories.cassettes.replay` runs a provider with the credentials the pipeline's demo path sends:
a provider's `demo_credentials` where it declares them (an organization in a URL path must match the
recording), a placeholder secret for the rest, explicit ones winning."""

from __future__ import annotations

from decimal import Decimal
from typing import ClassVar

import pytest

from providers.cassette import Cassette, CassetteMiss
from providers.contract import FetchContext, Provider, ProviderError, ProviderKind, ScrapedOffer, ScrapeResult
from providers.http import get_json
from providers.registry import PROVIDERS
from tests.factories.cassettes import replay, replay_credentials

URL = "https://api.example/orgs/{org}/gpu-classes"


class OrgScoped(Provider):
    """A provider whose required organization credential is part of the request path."""

    name = "org-scoped"
    title = "Organization-scoped test provider"
    kind = ProviderKind.marketplace
    credentials: ClassVar[tuple[str, ...]] = ("ORG_ID", "ORG_KEY")
    demo_credentials: ClassVar[dict[str, str]] = {"ORG_ID": "demo-org"}

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        org = ctx.secret("ORG_ID")
        payload = await get_json(ctx, URL.format(org=org), headers={"Org-Key": ctx.secret("ORG_KEY")})
        result = ScrapeResult()
        for item in payload["items"]:
            result.offers.append(
                ScrapedOffer(
                    key=f"{org}:{item['name']}",
                    gpu_name=item["name"],
                    gpu_count=Decimal(1),
                    price_per_hour=Decimal(item["price"]),
                )
            )
        return result


def _cassette() -> Cassette:
    body = {"items": [{"name": "RTX 4090 (24 GB)", "price": "0.3"}]}
    return Cassette.from_json(
        {
            "provider": OrgScoped.name,
            "recorded_at": "2026-11-29T00:00:00Z",
            "source": "hand-written for this test",
            "interactions": [
                {
                    "request": {"method": "GET", "url": URL.format(org="demo-org"), "body": None},
                    "response": {"status": 200, "headers": {}, "json": body},
                }
            ],
        }
    )


def test_demo_credentials_fill_the_declared_ones() -> None:
    assert replay_credentials(OrgScoped) == {"ORG_ID": "demo-org", "ORG_KEY": "test-secret"}
    assert replay_credentials(OrgScoped, ORG_KEY="k") == {"ORG_ID": "demo-org", "ORG_KEY": "k"}
    assert replay_credentials(OrgScoped, ORG_ID="acme")["ORG_ID"] == "acme"


def test_an_organization_scoped_provider_replays_with_its_demo_organization() -> None:
    result = replay(OrgScoped, _cassette())
    assert [o.key for o in result.offers] == ["demo-org:RTX 4090 (24 GB)"]
    assert result.offers[0].price_per_hour == Decimal("0.3")


def test_another_organization_misses_the_recording() -> None:
    # The demo value is what makes the replay match: an explicit other organization asks for another path.
    with pytest.raises((CassetteMiss, ProviderError), match="no recorded response"):
        replay(OrgScoped, _cassette(), ORG_ID="acme")


def test_every_registered_provider_replays_with_what_the_demo_path_sends() -> None:
    for provider in PROVIDERS:
        creds = replay_credentials(provider)
        assert set(creds) == set(provider.credentials), provider.name
        for name, value in provider.demo_credentials.items():
            if name in provider.credentials:
                assert creds[name] == value, provider.name
