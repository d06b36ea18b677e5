"""RunPod adapter against its bundled schema-faithful cassette (GraphQL: the public readers' shape; REST v2: built
from RunPod's v2 reference) and against a real 2025 `gpuTypes` capture."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx
import pytest

from providers.adapters.runpod import (
    API_KEY,
    META_QUERY,
    REST_URL,
    URL,
    Location,
    RunPod,
    parse_catalog,
    parse_metadata,
    parse_prices,
)
from providers.cassette import Cassette
from providers.contract import Pricing, ProviderError, ProviderKind, ScrapeResult
from providers.registry import get_provider
from tests.factories.cassettes import (
    SpyTransport,
    answer,
    assert_integrity,
    assert_replay_drops,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    mutated_cassette,
    replay_fixture,
    resolve_all,
)
from tests.factories.real_payloads import real_payload
from tracker.catalog.gpus import get_catalog

H100 = "NVIDIA H100 80GB HBM3"
RTX4090 = "NVIDIA GeForce RTX 4090"
WK = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
SERVER = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
KEY = {API_KEY: "rp-secret-123"}
REAL = "runpod/Jumbo2020_13a47f9_gpu_prices.json"  # Jumbo2020/gpu_prices @ 13a47f9: data.gpuTypes, 2025-06
# The bundled cassette: the GraphQL metadata query, 17 GraphQL price queries, then 8 REST v2 requests.
PRICE_QUERIES = slice(1, 18)
REST_INTERACTIONS = slice(18, None)


def run(
    cassette: Cassette | None = None, credentials: dict[str, str] | None = None
) -> tuple[ScrapeResult, list[httpx.Request]]:
    """Fetch with exactly `credentials` and keep every request as sent (headers and URL included)."""
    return fetch_recording(RunPod, credentials, cassette, transport=SpyTransport)


result = replay_fixture(RunPod)


@pytest.fixture(scope="module")
def offers(result: ScrapeResult) -> dict[str, Any]:
    return by_key(result)


def test_registered_without_required_credentials() -> None:
    assert get_provider("runpod") is RunPod
    assert RunPod.credentials == ()  # runs without a key are never skipped
    assert RunPod.optional_credentials == (API_KEY,)
    assert RunPod.parser_version == "2"
    assert RunPod.kind is ProviderKind.cloud
    assert RunPod.describe()["default_interval_s"] == 3600


def test_integrity(result: ScrapeResult) -> None:
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H100-PCIE-80GB",
            "A100-SXM-80GB",
            "H200-SXM-141GB",
            "RTX4090-24GB",
            "RTX6000ADA-48GB",
            "L40S-48GB",
            "MI300X-192GB",
            "RTX3070-8GB",
        },
        allowed_unknown={"NVIDIA GeForce GTX 1080 Ti"},
        min_offers=20,
        provider="runpod",
    )
    assert resolved[f"{H100}:8:secure:US-TX-3"] == "H100-SXM-80GB"
    assert resolved["NVIDIA H100 PCIe:1:secure:EU-RO-1"] == "H100-PCIE-80GB"
    assert resolved[f"{H100}:8:secure:US-TX-3:spot"] == "H100-SXM-80GB"
    assert len(result.offers) == 45  # 26 on-demand, 19 spot


def test_per_gpu_price_times_count(offers: dict[str, Any]) -> None:
    secure = offers[f"{H100}:2:secure:US-TX-3"]
    assert secure.price_per_hour == Decimal("5.38")
    assert secure.price_per_gpu_hour == Decimal("2.69")
    assert secure.gpu_count == Decimal(2)
    assert secure.gpu_name == H100  # the id names one card; the display name drifts
    assert secure.gpu_memory_gb == Decimal(80)
    assert (secure.vcpus, secure.ram_gb) == (Decimal(32), Decimal(250))
    assert secure.instance_type == "2x H100 SXM"
    assert secure.attributes == {
        "gpu_id": H100,
        "display_name": "H100 SXM",
        "cloud": "secure",
        "stock_status": "High",
        "manufacturer": "Nvidia",
    }
    eight = offers[f"{H100}:8:secure:US-TX-3"]
    assert eight.price_per_hour == Decimal("21.52")
    community = offers[f"{RTX4090}:2:community:US"]
    assert community.price_per_hour == Decimal("0.68")  # communityPrice, not securePrice
    assert community.attributes["cloud"] == "community"


def test_regions_and_availability(result: ScrapeResult, offers: dict[str, Any]) -> None:
    # listed datacenters (secure) and non-null country codes (community); US-XX-9 is unlisted
    assert {o.region for o in result.offers} == {"us-tx-3", "eu-ro-1", "us", "cz"}
    assert all(o.available is True for o in result.offers)
    assert offers["NVIDIA H200:1:secure:US-TX-3"].attributes["stock_status"] == "Low"


def test_spot_offers_per_cloud_below_on_demand(result: ScrapeResult, offers: dict[str, Any]) -> None:
    spot = offers[f"{H100}:2:secure:US-TX-3:spot"]
    assert (spot.pricing, spot.price_per_hour, spot.gpu_count) == (Pricing.spot, Decimal("3.38"), Decimal(2))
    assert spot.attributes["cloud"] == "secure" and spot.available is True and spot.region == "us-tx-3"
    assert offers["NVIDIA H100 PCIe:4:community:US:spot"].price_per_hour == Decimal("5.00")  # communitySpotPrice
    assert offers["NVIDIA H100 PCIe:1:secure:EU-RO-1:spot"].price_per_hour == Decimal("1.39")  # secureSpotPrice
    assert f"{RTX4090}:2:community:US:spot" not in offers  # community spot 0.34 = community price 0.34
    assert f"{RTX4090}:2:community:CZ:spot" not in offers  # community spot 0.34 > community price 0.31
    assert f"{RTX4090}:2:secure:US-TX-3:spot" in offers  # secure spot 0.39 < secure price 0.69
    assert "NVIDIA H200:1:secure:US-TX-3:spot" not in offers  # no spot rate
    spots = [o for o in result.offers if o.pricing is Pricing.spot]
    assert len(spots) == 19
    assert all(o.price_per_hour < offers[o.key.removesuffix(":spot")].price_per_hour for o in spots)


def test_out_of_stock_and_oversize_sizes_dropped(offers: dict[str, Any]) -> None:
    assert f"{RTX4090}:1:secure:US-TX-3" not in offers  # stockStatus null
    assert "NVIDIA H200:2:secure:US-TX-3" not in offers  # stockStatus null
    assert "NVIDIA L40S:2:secure:EU-RO-1" not in offers  # stockStatus null
    assert f"{RTX4090}:8:secure:US-TX-3" not in offers  # maxGpuCountSecureCloud = 6
    assert f"{RTX4090}:8:community:US" in offers  # maxGpuCountCommunityCloud = 8
    assert "NVIDIA H100 PCIe:8:community:US" not in offers  # maxGpuCountCommunityCloud = 4
    assert "NVIDIA H100 PCIe:4:community:US" in offers
    assert "AMD Instinct MI300X OAM:1:community:US" not in offers  # secure cloud only
    assert "NVIDIA GeForce RTX 3070:1:community:US" in offers


def test_skipped_reasons(result: ScrapeResult) -> None:
    assert any("'NVIDIA Mystery X1' missing from the metadata query" in s for s in result.skipped)
    assert any("A100 SXM has no community price" in s for s in result.skipped)
    assert len(result.skipped) == 2


def test_call_budget_and_retry() -> None:
    result, requests = run()
    bodies = [json.loads(r.content) for r in requests]
    assert bodies[0] == {"query": META_QUERY}
    inputs = [b["variables"]["lowestPriceInput"] for b in bodies[1:]]
    # 4 sizes × (2 listed datacenters + 2 country codes), plus one retry after the recorded 429
    assert len(inputs) == 17
    assert {i["gpuCount"] for i in inputs} == {1, 2, 4, 8}
    assert {i.get("dataCenterId") for i in inputs if i["secureCloud"]} == {"US-TX-3", "EU-RO-1"}
    assert {i.get("countryCode") for i in inputs if not i["secureCloud"]} == {"US", "CZ"}
    retried = {"secureCloud": False, "countryCode": "CZ", "gpuCount": 2}
    assert inputs.count(retried) == 2
    assert f"{RTX4090}:2:community:CZ" in {o.key for o in result.offers}  # served after the 429


def test_keyless_runs_use_graphql_anonymously() -> None:
    _, anonymous = run()
    assert {(r.method, str(r.url)) for r in anonymous} == {("POST", URL)}
    assert all("api_key" not in r.url.params and "authorization" not in r.headers for r in anonymous)


def test_key_switches_to_rest_v2_with_bearer_auth() -> None:
    keyed, requests = run(credentials=KEY)
    assert len(requests) == 8 and all(r.method == "GET" and r.url.copy_with(query=None) == REST_URL for r in requests)
    assert all(r.headers["authorization"] == "Bearer rp-secret-123" and "api_key" not in r.url.params for r in requests)
    asked = {(r.url.params["cloud"], r.url.params["count"]) for r in requests}
    assert asked == {(c, n) for c in ("SECURE", "COMMUNITY") for n in ("1", "2", "4", "8")}
    assert all(r.url.params["include"] == "AVAILABILITY" for r in requests)
    assert len(keyed.offers) == 58


def test_key_never_in_error_message() -> None:
    fail = mutated_cassette(RunPod, answer(500, text="upstream error rp-secret-123", at=REST_INTERACTIONS))
    with pytest.raises(ProviderError) as err:
        run(fail, credentials=KEY)
    assert "rp-secret-123" not in str(err.value)
    assert "gave up after 4 attempts" in str(err.value)
    unauthorized = mutated_cassette(RunPod, answer(401, text="bad key rp-secret-123", at=REST_INTERACTIONS))
    with pytest.raises(ProviderError, match="HTTP 401") as err:
        run(unauthorized, credentials=KEY)
    assert "rp-secret-123" not in str(err.value)


def test_truncated_json_raises() -> None:
    assert_replay_raises(RunPod, answer(200, text='{"data": {"countryCodes": ["US"', at=0), "invalid JSON")


def test_missing_metadata_key_raises() -> None:
    assert_replay_raises(RunPod, json_without(0, "data", "dataCenters"), "'dataCenters' missing")


def test_missing_price_field_raises() -> None:
    no_stock = json_without(1, "data", "gpuTypes", 0, "lowestPrice", "stockStatus")
    assert_replay_drops(RunPod, no_stock, "'stockStatus' missing")


def test_graphql_errors_raise() -> None:
    errors = json_with(1, value={"errors": [{"message": "Unknown argument gpuCount"}]})
    assert_replay_raises(RunPod, errors, r"GraphQL error.*Unknown argument gpuCount")


@pytest.mark.parametrize(
    ("mutation", "match"),
    [
        (answer(410, text="Gone", at=0), r"endpoint retired \(HTTP 410\)"),
        (answer(404, text="Not Found", at=PRICE_QUERIES), r"endpoint retired \(HTTP 404\)"),
        (
            json_with(1, value={"errors": [{"message": 'Cannot query field "lowestPrice" on type "GpuType".'}]}),
            r"endpoint retired \(price query .*lowestPrice",
        ),
        (
            json_with(1, value={"errors": [{"message": "lowestPrice has been retired, use REST v2"}]}),
            r"endpoint retired .*lowestPrice has been retired",
        ),
    ],
)
def test_retired_graphql_says_so_and_names_the_way_out(mutation: Any, match: str) -> None:
    message = assert_replay_raises(RunPod, mutation, match)
    assert f"TRACKER_{API_KEY}" in message and "/v2/catalog/gpus" in message


def test_repeated_500_raises() -> None:
    assert_replay_raises(RunPod, answer(500, text="oops", at=slice(1, None)), "HTTP 500")


def test_min_pod_count_respected() -> None:
    meta = parse_metadata(
        {
            "data": {
                "countryCodes": [],
                "dataCenters": [],
                "gpuTypes": [
                    {
                        "id": "NVIDIA B200",
                        "displayName": "B200",
                        "memoryInGb": 180,
                        "maxGpuCount": 8,
                        "minPodGpuCount": 2,
                    },
                ],
            }
        }
    )
    assert meta.counts() == [1, 2, 4, 8]
    row = {
        "id": "NVIDIA B200",
        "securePrice": 5.99,
        "communityPrice": None,
        "lowestPrice": {"stockStatus": "High", "minVcpu": 28, "minMemory": 180},
    }
    one = parse_prices({"data": {"gpuTypes": [row]}}, meta, Location(True, "US-CA-2"), 1)
    two = parse_prices({"data": {"gpuTypes": [row]}}, meta, Location(True, "US-CA-2"), 2)
    assert one.offers == []
    assert [o.price_per_hour for o in two.offers] == [Decimal("11.98")]


# --- REST v2 (a key configured) -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyed() -> ScrapeResult:
    return run(credentials=KEY)[0]


def test_rest_v2_integrity_and_names(keyed: ScrapeResult) -> None:
    resolved = assert_integrity(
        keyed,
        expected_gpus={"H100-SXM-80GB", "H200-NVL-141GB", "RTXPRO6000-96GB", "RTX4090-24GB", "B200-SXM-180GB"},
        provider="runpod",
    )
    offers = by_key(keyed)
    nvl = offers["NVIDIA H200 NVL:1:secure"]  # 143 GB reported for the 141 GB card
    assert (nvl.gpu_memory_gb, resolved[nvl.key]) == (Decimal(143), "H200-NVL-141GB")
    # 2026: "RTX PRO 6000" is the Server Edition and "RTX PRO 6000 WK" the Workstation one: the id decides
    assert offers[f"{SERVER}:1:secure"].attributes["display_name"] == "RTX PRO 6000"
    assert offers[f"{WK}:1:secure"].attributes["display_name"] == "RTX PRO 6000 WK"
    assert {offers[f"{SERVER}:1:secure"].gpu_name, offers[f"{WK}:1:secure"].gpu_name} == {SERVER, WK}
    assert resolved[f"{SERVER}:1:secure"] == resolved[f"{WK}:1:secure"] == "RTXPRO6000-96GB"
    assert {o.region for o in keyed.offers} == {""}


def test_rest_v2_prices_spot_and_stock(keyed: ScrapeResult) -> None:
    offers = by_key(keyed)
    h100 = offers[f"{H100}:2:community"]
    assert (h100.price_per_hour, h100.available, h100.attributes["stock_status"]) == (Decimal("4.98"), True, "LOW")
    assert offers[f"{H100}:2:community:spot"].price_per_hour == Decimal("2.78")
    assert offers[f"{H100}:1:secure:spot"].attributes["cloud"] == "secure"
    # stock NONE: still offered (its price history goes on) but not available now
    b200 = offers["NVIDIA B200:1:secure"]
    assert (b200.available, b200.attributes["stock_status"]) == (False, "NONE")
    assert offers[f"{H100}:4:community"].available is None  # no availability object for it
    assert "NVIDIA B200:1:community" not in offers  # communityCloud false: its 0 price is a placeholder
    assert "NVIDIA H200 NVL:1:community" not in offers  # communityCloud false: its 0.5 price is a placeholder
    assert f"{RTX4090}:1:community:spot" not in offers  # community spot 0.34 = community price
    assert f"{RTX4090}:8:secure" not in offers and f"{RTX4090}:8:community" in offers  # per-cloud maxima
    assert f"{WK}:8:secure" not in offers  # maxGpuCount 4
    spots = [o for o in keyed.offers if o.pricing is Pricing.spot]
    assert len(spots) == 25  # of 33 on-demand offers
    assert len(keyed.offers) - len(spots) == 33
    assert all(o.price_per_hour < offers[o.key.removesuffix(":spot")].price_per_hour for o in spots)


def test_rest_v2_shapes() -> None:
    item = {
        "gpuId": "NVIDIA L40S",
        "displayName": "L40S",
        "memoryInGb": 48,
        "maxGpuCount": 8,
        "securePrice": 0.86,
        "stockStatus": "High",
    }
    (bare,) = parse_catalog([item], "secure", 1).offers  # a bare list; runpodctl-style id and stock
    assert (bare.key, bare.available, bare.attributes["stock_status"]) == ("NVIDIA L40S:1:secure", True, "HIGH")
    assert [o.key for o in parse_catalog({"items": [item]}, "secure", 1).offers] == ["NVIDIA L40S:1:secure"]
    with pytest.raises(ProviderError, match="no item list"):
        parse_catalog({"gpuTypes": None, "cursor": "x"}, "secure", 1)
    with pytest.raises(ProviderError, match="no securePrice in any"):
        parse_catalog({"data": [{"id": "NVIDIA L40S", "prices": {"secure": 0.86}}]}, "secure", 1)


def test_rest_v2_truncated_json_raises() -> None:
    def cut(raw: dict[str, Any]) -> None:
        for interaction in raw["interactions"][REST_INTERACTIONS]:
            interaction["response"] = {"status": 200, "headers": {}, "text": '{"data": [{"id": "NVIDIA'}

    with pytest.raises(ProviderError, match="invalid JSON"):
        run(mutated_cassette(RunPod, cut), credentials=KEY)


# --- the real 2025 capture (../shared/real-payloads, read at test time) ----------------------------------


@pytest.fixture(scope="module")
def gpu_types() -> list[dict[str, Any]]:
    return real_payload(REAL)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def real(gpu_types: list[dict[str, Any]]) -> ScrapeResult:
    parts = [parse_catalog(gpu_types, cloud, count) for count in (1, 8) for cloud in ("secure", "community")]
    return ScrapeResult(offers=[o for p in parts for o in p.offers], skipped=[s for p in parts for s in p.skipped])


def test_real_spot_offers_for_the_types_that_publish_spot_prices(gpu_types: list[dict[str, Any]], real) -> None:
    with_spot = {t["id"] for t in gpu_types if t["secureSpotPrice"] is not None or t["communitySpotPrice"] is not None}
    assert (len(with_spot), len(gpu_types)) == (34, 39)
    offers = by_key(real)
    spots = {o.key: o for o in real.offers if o.pricing is Pricing.spot}
    assert {o.gpu_name for o in spots.values()} == with_spot  # every type with a spot rate has a spot offer
    assert sum(o.key.split(":")[1] == "1" for o in spots.values()) == 48  # of 55 one-GPU on-demand offers
    assert sum(o.pricing is Pricing.on_demand and o.gpu_count == 1 for o in real.offers) == 55
    for key, spot in spots.items():
        on_demand = offers[key.removesuffix(":spot")]
        assert spot.price_per_hour < on_demand.price_per_hour, key
        assert spot.attributes["cloud"] == on_demand.attributes["cloud"]
    h100 = offers[f"{H100}:1:community:spot"]  # communitySpotPrice, on the community on-demand price
    assert (h100.price_per_hour, offers[f"{H100}:1:community"].price_per_hour) == (Decimal("1.5"), Decimal("2.69"))
    # A spot rate shown for a cloud the type is not sold in is no offer (A30: secure cloud false)
    assert "NVIDIA A30:1:secure:spot" not in offers and "NVIDIA A30:1:community:spot" in offers


def test_real_placeholder_prices_of_unsold_clouds_are_ignored(gpu_types: list[dict[str, Any]], real) -> None:
    offers = by_key(real)
    assert "AMD Instinct MI300X OAM:1:community" not in offers  # communityPrice 0.5, communityCloud false
    assert "NVIDIA GeForce RTX 3070:1:secure" not in offers  # securePrice 0, secureCloud false
    assert not any(o.gpu_name == "unknown" for o in real.offers)  # the "unknown" type is sold nowhere
    assert "NVIDIA A30:8:community" not in offers and "NVIDIA A30:1:community" in offers  # maxGpuCount 4
    sold = sum(bool(t[f"{c}Cloud"]) and (t[f"{c}Price"] or 0) > 0 for t in gpu_types for c in ("secure", "community"))
    assert sold == 55 and real.skipped == []
    assert all(o.available is None and o.region == "" for o in real.offers)  # the capture has no stock data


def test_real_names_resolve_by_id_or_are_reported_unknown(gpu_types: list[dict[str, Any]], real) -> None:
    resolved, unknown = resolve_all(real, "runpod")
    # cards the catalog may lack are reported by their id, never guessed (both are in the catalog's notes)
    assert set(unknown) <= {"NVIDIA RTX A2000", "Tesla V100-FHHL-16GB"}, unknown
    offers = by_key(real)
    by_type = {o.gpu_name: resolved[o.key] for o in real.offers if o.key in resolved}
    assert by_type["Tesla V100-PCIE-16GB"] == "V100-PCIE-16GB"  # displayName "Tesla V100" is ambiguous
    assert by_type[WK] == "RTXPRO6000-96GB"  # displayName "RTX PRO 6000" in 2025
    assert offers[f"{WK}:1:secure"].attributes["display_name"] == "RTX PRO 6000"
    assert by_type["NVIDIA H100 NVL"] == "H100-NVL-94GB" and by_type["NVIDIA H200"] == "H200-SXM-141GB"
    assert by_type[H100] == "H100-SXM-80GB" and by_type["NVIDIA A100 80GB PCIe"] == "A100-PCIE-80GB"
    catalog = get_catalog()
    for key, gpu_id in resolved.items():  # memory per GPU consistent with the card it resolved to
        spec, memory = catalog.get(gpu_id), float(offers[key].gpu_memory_gb or 0)
        sizes = (spec.memory_gb, *spec.reported_memory_gb)
        assert any(abs(memory - size) / size <= 0.07 for size in sizes), (key, memory, gpu_id)
    assert all(o.key in resolved or o.gpu_name in unknown for o in real.offers)
