"""Verda (DataCrunch) adapter against its bundled cassette (providers/cassettes/verda.json)."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

from providers.adapters.verda import Verda, parse
from providers.cassette import bundled_cassette
from providers.contract import Pricing
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_drops,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    mutated_cassette,
    replay_fixture,
    resolve_all,
)
from tests.factories.real_payloads import real_payload

CREDS = {"VERDA_CLIENT_ID": "cid-123", "VERDA_CLIENT_SECRET": "shh-secret-456"}
TOKEN, TYPES, TYPES_OK, LOCATIONS, AVAIL_OD, AVAIL_SPOT = range(6)  # interaction indexes


result = replay_fixture(Verda)


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
    with_token = mutated_cassette(Verda, json_with(TOKEN, "access_token", value="tok-live-789"))
    result, requests = fetch_recording(Verda, CREDS, with_token)
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

    message = assert_secrets_hidden(Verda, CREDS, echo, status=403)  # client id and secret
    assert "/v1/locations" in message and "tok-live-789" not in message


def test_cassette_holds_no_secrets():
    raw = json.loads(bundled_cassette("verda").read_text())
    token = raw["interactions"][TOKEN]
    assert token["request"]["body"] is None  # the client id/secret body is not recorded
    assert token["response"]["json"]["access_token"] == "<redacted>"
    assert token["response"]["json"]["refresh_token"] == "<redacted>"


def test_missing_credentials():
    assert_missing_credentials(Verda, "VERDA_CLIENT_ID")
    assert_missing_credentials(Verda, "VERDA_CLIENT_SECRET", VERDA_CLIENT_ID="cid-123")


def test_token_response_without_access_token_raises():
    assert_replay_raises(Verda, json_with(TOKEN, value={"error": "invalid_client"}), "access_token")


def test_truncated_json_raises():
    truncated = answer(200, text='[{"id": "c01dd00d", "instance_ty', at=TYPES_OK)
    assert_replay_raises(Verda, truncated, "invalid JSON")


def test_schema_change_raises():
    assert_replay_drops(Verda, json_without(TYPES_OK, 0, "gpu"), "'gpu' missing")
    assert_replay_drops(Verda, json_without(TYPES_OK, 2, "price_per_hour"), "'price_per_hour' missing")
    locations_object = json_with(LOCATIONS, value={"locations": []})
    assert_replay_raises(Verda, locations_object, "/locations response is not a list")

    def availability_renamed(raw):
        for entry in raw["interactions"][AVAIL_SPOT]["response"]["json"]:
            entry["instance_types"] = entry.pop("availabilities")

    assert_replay_drops(Verda, availability_renamed, "'availabilities' missing")


def test_http_500_past_retries_raises():
    token_500 = answer(500, json={"error": "internal"}, at=TOKEN)
    assert_replay_raises(Verda, token_500, "gave up after 4 attempts: HTTP 500 from POST")


# --- the real instance types, locations and spot availability -----------------------------------------

REAL = "verda/gpuhunt_310de51_{}.json"
REGION = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@pytest.fixture(scope="module")
def real():
    # No on-demand availability was captured: `[]` lists nothing anywhere, so only spot availability is real.
    return parse(
        real_payload(REAL.format("instance_types")),
        real_payload(REAL.format("locations")),
        [],
        real_payload(REAL.format("availability_spot")),
    )


def test_real_cards_prices_and_memory(real):
    resolved, unknown = resolve_all(real, "verda")
    assert unknown == {} and real.skipped == []
    # 3 GPU types x 3 locations, on demand and spot; the CPU node (0 GPUs, empty description) is skipped
    assert len(real.offers) == 18
    assert not any(o.instance_type == "CPU.120V.480G" for o in real.offers)
    assert {o.instance_type: resolved[o.key] for o in real.offers} == {
        "1H100.80S.30V": "H100-SXM-80GB",
        "2A6000.20V": "RTXA6000-48GB",
        "1V100.6V": "V100-PCIE-16GB",  # "Tesla V100 16GB" names no form factor: slowest variant assumed
    }
    assert "variant_assumed" in by_key(real)["1V100.6V:fin-01"].attributes
    offers = by_key(real)
    h100, h100_spot = offers["1H100.80S.30V:fin-01"], offers["1H100.80S.30V:fin-01:spot"]
    assert (h100.gpu_name, h100.gpu_count, h100.gpu_memory_gb) == ("H100 SXM5 80GB", 1, 80)
    assert (h100.price_per_hour, h100.pricing) == (Decimal("3.95"), Pricing.on_demand)
    assert (h100_spot.price_per_hour, h100_spot.pricing) == (Decimal("1.70"), Pricing.spot)
    a6000 = offers["2A6000.20V:ice-01:spot"]
    assert (a6000.gpu_count, a6000.gpu_memory_gb) == (2, 48)  # gpu_memory 96 GB is the instance's total
    assert (a6000.price_per_gpu_hour, offers["2A6000.20V:ice-01"].price_per_gpu_hour) == (
        Decimal("0.35"),
        Decimal("0.99"),
    )
    assert {o.region for o in real.offers} == {"fin-01", "fin-02", "ice-01"}
    assert all(REGION.match(o.region) for o in real.offers)


def test_real_spot_availability_per_location(real):
    spot = {o.key: o.available for o in real.offers if o.pricing is Pricing.spot}
    # FIN-01 lists 2A6000.20V and 1V100.6V (and CPU types); ICE-01 only CPU types; FIN-02 is absent
    assert {k for k, available in spot.items() if available} == {"2A6000.20V:fin-01:spot", "1V100.6V:fin-01:spot"}
    assert spot["1H100.80S.30V:fin-01:spot"] is False
    assert spot["2A6000.20V:ice-01:spot"] is False and spot["2A6000.20V:fin-02:spot"] is False
