"""Verda (DataCrunch) adapter against its bundled cassette (providers/cassettes/verda.json)."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal

import httpx
import pytest

from providers.base import FetchContext, MissingCredentials, ProviderError
from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.verda import Verda
from tests.providers.helpers import assert_integrity, mutated_cassette, replay
from tracker.offers import Pricing

CREDS = {"VERDA_CLIENT_ID": "cid-123", "VERDA_CLIENT_SECRET": "shh-secret-456"}
TOKEN, TYPES, TYPES_OK, LOCATIONS, AVAIL_OD, AVAIL_SPOT = range(6)  # interaction indexes


class SpyTransport(ReplayTransport):
    """Replays the cassette and keeps every request the adapter sent."""

    def __init__(self, cassette: Cassette) -> None:
        super().__init__(cassette)
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await super().handle_async_request(request)


def fetch_with(credentials: dict[str, str], cassette: Cassette | None = None):
    spy = SpyTransport(cassette or Cassette.load(bundled_cassette("verda")))

    async def go():
        async with httpx.AsyncClient(transport=spy, timeout=5) as client:
            ctx = FetchContext(client=client, credentials=credentials, retries=3, backoff_base_s=0)
            return await Verda().fetch(ctx)

    return asyncio.run(go()), spy.requests


def with_token(value: str):
    def mutate(raw):
        raw["interactions"][TOKEN]["response"]["json"]["access_token"] = value

    return mutated_cassette(Verda, mutate)


@pytest.fixture(scope="module")
def result():
    return replay(Verda)


def by_key(result):
    return {o.key: o for o in result.offers}


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H200-SXM-141GB",
            "A100-SXM-80GB",
            "A100-SXM-40GB",
            "B200-SXM-180GB",
            "B300-SXM-288GB",
            "L40S-48GB",
            "RTXA6000-48GB",
            "RTX6000ADA-48GB",
        },
        allowed_unknown={"Tesla V100 16GB"},  # no SXM/PCIe hint in Verda's description
    )
    assert resolved["8H100.80S.176V:fin-02"] == "H100-SXM-80GB"
    assert resolved["1B300.30V:ice-01"] == "B300-SXM-288GB"  # provider says 262GB
    # 11 GPU types × 3 locations on demand + 9 types with a spot price × 3 locations; CPU type skipped
    assert len(result.offers) == 60
    assert not any(o.instance_type == "CPU.4V.16G" for o in result.offers)


def test_instance_price_and_per_gpu_memory(result):
    offers = by_key(result)
    eight = offers["8H100.80S.176V:fin-01"]
    assert eight.price_per_hour == Decimal("31.60")  # per instance, as the API says
    assert eight.price_per_gpu_hour == Decimal("3.95")
    assert (eight.gpu_count, eight.gpu_memory_gb) == (8, 80)  # gpu_memory 640 GB is the total
    assert (eight.vcpus, eight.ram_gb) == (176, 1480)
    assert eight.gpu_name == "H100 SXM5 80GB"
    a6000 = offers["2A6000.20V:fin-01"]
    assert (a6000.gpu_memory_gb, a6000.price_per_gpu_hour) == (48, Decimal("0.99"))


def test_spot_offers(result):
    offers = by_key(result)
    spot = offers["1H100.80S.30V:fin-01:spot"]
    assert (spot.pricing, spot.price_per_hour) == (Pricing.spot, Decimal("1.70"))
    assert offers["1H100.80S.30V:fin-01"].pricing is Pricing.on_demand
    assert "8B200.240V:ice-01:spot" not in offers  # spot_price null
    assert "1B300.30V:fin-01:spot" not in offers
    assert sum(o.pricing is Pricing.spot for o in result.offers) == 27


def test_availability_per_location(result):
    offers = by_key(result)
    assert {o.region for o in result.offers} == {"fin-01", "fin-02", "ice-01"}
    assert offers["1H100.80S.30V:fin-01"].available is True
    assert offers["1H100.80S.30V:fin-02"].available is False
    assert offers["8B200.240V:ice-01"].available is True
    assert offers["1V100.6V:fin-01"].available is False  # on demand: not listed
    assert offers["1V100.6V:fin-01:spot"].available is True  # spot: listed
    assert offers["1H100.80S.30V:fin-01:spot"].available is False
    assert offers["1A100.22V:ice-01:spot"].available is False  # location missing from spot availability


def test_oauth_flow_sends_credentials_then_bearer_token():
    result, requests = fetch_with(CREDS, with_token("tok-live-789"))
    assert len(result.offers) == 60
    token_call = requests[0]
    assert (token_call.method, token_call.url.path) == ("POST", "/v1/oauth2/token")
    assert json.loads(token_call.content) == {
        "grant_type": "client_credentials",
        "client_id": "cid-123",
        "client_secret": "shh-secret-456",
    }
    rest = requests[1:]
    assert [r.url.path for r in rest] == [
        "/v1/instance-types",  # 429
        "/v1/instance-types",
        "/v1/locations",
        "/v1/instance-availability",
        "/v1/instance-availability",
    ]
    assert [r.url.params.get("is_spot") for r in rest[3:]] == ["false", "true"]
    assert {r.headers["authorization"] for r in rest} == {"Bearer tok-live-789"}
    assert not any("shh-secret-456" in str(r.url) or b"shh-secret-456" in r.content for r in rest)


def test_secrets_and_token_never_in_errors():
    def echo(raw):
        raw["interactions"][TOKEN]["response"]["json"]["access_token"] = "tok-live-789"
        raw["interactions"][LOCATIONS]["response"] = {
            "status": 403,
            "json": {"code": "forbidden", "message": "token tok-live-789 of cid-123 lacks scope (shh-secret-456)"},
        }

    with pytest.raises(ProviderError) as err:
        fetch_with(CREDS, mutated_cassette(Verda, echo))
    message = str(err.value)
    assert "HTTP 403" in message and "/v1/locations" in message
    for secret in ("tok-live-789", "cid-123", "shh-secret-456"):
        assert secret not in message


def test_cassette_holds_no_secrets():
    raw = json.loads(bundled_cassette("verda").read_text())
    token = raw["interactions"][TOKEN]
    assert token["request"]["body"] is None  # the client id/secret body is not recorded
    assert token["response"]["json"]["access_token"] == "<redacted>"
    assert token["response"]["json"]["refresh_token"] == "<redacted>"


def test_missing_credentials():
    with pytest.raises(MissingCredentials):
        fetch_with({})
    with pytest.raises(MissingCredentials, match="VERDA_CLIENT_SECRET"):
        fetch_with({"VERDA_CLIENT_ID": "cid-123"})


def test_token_response_without_access_token_raises():
    def no_token(raw):
        raw["interactions"][TOKEN]["response"]["json"] = {"error": "invalid_client"}

    with pytest.raises(ProviderError, match="access_token"):
        replay(Verda, mutated_cassette(Verda, no_token))


def test_truncated_json_raises():
    def truncate(raw):
        raw["interactions"][TYPES_OK]["response"] = {"status": 200, "text": '[{"id": "c01dd00d", "instance_ty'}

    with pytest.raises(ProviderError, match="invalid JSON"):
        replay(Verda, mutated_cassette(Verda, truncate))


def test_schema_change_raises():
    def no_gpu(raw):
        del raw["interactions"][TYPES_OK]["response"]["json"][0]["gpu"]

    with pytest.raises(ProviderError, match="'gpu' missing"):
        replay(Verda, mutated_cassette(Verda, no_gpu))

    def no_price(raw):
        del raw["interactions"][TYPES_OK]["response"]["json"][2]["price_per_hour"]

    with pytest.raises(ProviderError, match="'price_per_hour' missing"):
        replay(Verda, mutated_cassette(Verda, no_price))

    def locations_object(raw):
        raw["interactions"][LOCATIONS]["response"]["json"] = {"locations": []}

    with pytest.raises(ProviderError, match="/locations response is not a list"):
        replay(Verda, mutated_cassette(Verda, locations_object))

    def availability_renamed(raw):
        for entry in raw["interactions"][AVAIL_SPOT]["response"]["json"]:
            entry["instance_types"] = entry.pop("availabilities")

    with pytest.raises(ProviderError, match="'availabilities' missing"):
        replay(Verda, mutated_cassette(Verda, availability_renamed))


def test_http_500_past_retries_raises():
    def token_500(raw):
        raw["interactions"][TOKEN]["response"] = {"status": 500, "json": {"error": "internal"}}

    with pytest.raises(ProviderError, match="gave up after 4 attempts: HTTP 500 from POST"):
        replay(Verda, mutated_cassette(Verda, token_500))
