"""GCP Cloud Billing Catalog adapter against its bundled cassette (providers/cassettes/gcp.json)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from providers.adapters.gcp import URL, Gcp, location_of, model_of, parse_page
from providers.cassette import Cassette
from providers.contract import Pricing, ProviderError
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
    replay,
    replay_fixture,
    resolve_all,
)
from tests.factories.real_payloads import real_payload
from tracker.catalog.gpus import get_catalog

SECRET = "AIzaSyD-test-0123456789abcdefghij"
REAL_SKUS = "gcp/Jumbo2020_2e0273b_gcp_gpu_skus_trimmed.json"  # 99 real SKUs: skuId, description, pricingInfo
REGION = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


result = replay_fixture(Gcp)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "A100-SXM-40GB",
            "A100-SXM-80GB",
            "H100-SXM-80GB",
            "H200-SXM-141GB",
            "B200-SXM-180GB",
            "L4-24GB",
            "T4-16GB",
            "V100-SXM-16GB",
        },
        allowed_unknown={"P100 PCIe 16GB", "P4 8GB", "K80"},  # not in the GPU catalog
    )
    assert resolved["039F-D0DA-4055:us-central1"] == "A100-SXM-40GB"
    assert resolved["F2B9-6C3D-1A58:us-central1"] == "H100-SXM-80GB"  # H100 Mega: same card
    assert resolved["5C2E-8A71-3D90:us-east5"] == "H200-SXM-141GB"  # "H200 141GB GPU": no vendor word
    assert resolved["9D3A-6E28-B417:us-east4"] == "H100-SXM-80GB"  # "H100 80GB Plus"
    assert len(result.offers) == 30
    assert all(REGION.match(o.region) for o in result.offers)


def test_units_and_nanos_per_gpu_hour(result):
    a100 = by_key(result)["039F-D0DA-4055:us-east1"]
    assert a100.price_per_hour == Decimal("2.933908")  # units "2" + 933908000 nanos
    assert a100.gpu_count == 1 and a100.price_per_gpu_hour == Decimal("2.933908")
    assert a100.attributes["price_scope"] == "gpu_only"  # the host VM is not included
    assert all(o.attributes["price_scope"] == "gpu_only" and o.gpu_count == 1 for o in result.offers)
    # the last tier is the price (the first tier of this SKU is a free allowance)
    assert by_key(result)["2B8D-4F6A-9C13:us-central1"].price_per_hour == Decimal("2.48")


def test_spot_from_usage_type(result):
    offers = by_key(result)
    assert offers["0AB3-3A14-C8D6:us-west1"].pricing is Pricing.spot
    assert offers["0AB3-3A14-C8D6:us-west1"].price_per_hour == Decimal("0.14")
    assert offers["7E2A-1C9B-6F30:europe-west4"].pricing is Pricing.spot  # "Spot Preemptible Nvidia L4 …"
    assert offers["0325-B5D3-8D96:us-west1"].pricing is Pricing.on_demand
    spot_skus = {o.attributes["sku"] for o in result.offers if o.pricing is Pricing.spot}
    assert spot_skus == {"0AB3-3A14-C8D6", "7E2A-1C9B-6F30", "A4D8-2B6C-7E91"}


def test_one_offer_per_sku_and_region_and_second_page(result):
    offers = by_key(result)
    assert {o.region for o in result.offers if o.attributes["sku"] == "0325-B5D3-8D96"} == {
        "us-central1",
        "us-east1",
        "us-east4",
        "us-west1",
    }
    h200 = offers["D7A1-3E4F-8B62:us-east4"]  # page 2, after a 429
    assert (h200.gpu_name, h200.gpu_memory_gb) == ("H200 SXM 141GB", 141)
    assert h200.attributes["machine_family"] == "a3-ultragpu"
    assert offers["F2B9-6C3D-1A58:us-central1"].attributes["variant"] == "mega"
    assert all(o.available is None for o in result.offers)


def test_skipped_skus(result):
    skipped = " | ".join(result.skipped)
    for sku in ("9A1B-4E5F-0C1D", "B1C4-55D0-79A2", "4D9F-2C1E-6A83", "3A7C-9E1F-5D24", "7B4F-1C6D-E852"):
        assert sku in skipped  # commitment, sole tenancy, DWS calendar, virtual workstation, DWS flex-start
        assert not any(o.attributes["sku"] == sku for o in result.offers)
    # category says OnDemand, but a DWS defined-duration rate is not on-demand: skipped, with the reason
    assert "7B4F-1C6D-E852: Nvidia H100 Mega 80GB GPU attached to DWS Defined Duration VMs" in skipped
    assert "not on-demand and no fixed term" in skipped
    assert "2A9C-4B7E-61F3: Licensing Fee" in skipped and "not a GPU price" in skipped
    assert not any(o.attributes["sku"] == "2E27-4F75-95CD" for o in result.offers)  # CPU core SKU
    assert "2E27-4F75-95CD" not in skipped  # non-GPU SKUs are skipped silently


def test_model_of():
    assert model_of("Nvidia Tesla T4 GPU attached to Spot Preemptible VMs running in Americas") == "T4"
    assert model_of("H200 141GB GPU running in Belgium") == "H200 141GB"
    assert model_of("Nvidia H100 Mega 80GB GPU running in Seoul") == "H100 Mega 80GB"
    assert model_of("Nvidia H100 80GB Mega GPU running in Americas") == "H100 80GB Mega"
    assert model_of("Nvidia B200 (1 gpu slice) running in Americas") == "B200"
    assert model_of("N1 Predefined Instance Core running in Americas") is None


def test_location_of():
    assert location_of("Nvidia L4 GPU attached to Spot Preemptible VMs running in Hong Kong") == "Hong Kong"
    assert location_of("Reserved Nvidia Tesla A100 GPU in Milan") == "Milan"
    assert location_of("Commitment v1: Nvidia L4 GPU running in Doha for 3 Years") == "Doha"
    assert location_of("Reserved Nvidia H100 80GB GPU in Frankfurt in Calendar Mode") == "Frankfurt"
    assert location_of("Licensing Fee for FreeBSD (GPU cost)") is None


# --- the real capture (99 Billing Catalog SKUs, exported without category and serviceRegions) ----------

# The model phrase each emitted description carries → the card it must resolve to. P100 and P4 are recent
# catalog additions: until the catalog holds them they must stay unresolved (reported), never guessed.
REAL_CARDS = [
    ("Tesla A100 80GB", "A100-SXM-80GB"),
    ("Tesla A100", "A100-SXM-40GB"),
    ("H100 80GB Mega", "H100-SXM-80GB"),
    ("H100 80GB Plus", "H100-SXM-80GB"),
    ("H100 80GB", "H100-SXM-80GB"),
    ("H200 141GB", "H200-SXM-141GB"),
    ("L4", "L4-24GB"),
    ("Tesla T4", "T4-16GB"),
    ("Tesla V100", "V100-SXM-16GB"),
    ("Tesla P100", "P100-PCIE-16GB"),
    ("Tesla P4", "P4-8GB"),
]


def _real_capture_cassette() -> Cassette:
    skus = real_payload(REAL_SKUS)
    interaction = {
        "request": {"method": "GET", "url": f"{URL}?key=<redacted>&pageSize=5000", "body": None},
        "response": {"status": 200, "headers": {"content-type": "application/json"}, "json": {"skus": skus}},
    }
    return Cassette.from_json({"provider": "gcp", "interactions": [interaction]})


@pytest.fixture(scope="module")
def real():
    return replay(Gcp, _real_capture_cassette(), GCP_API_KEY=SECRET)


def test_real_capture_every_offer_card_and_pricing(real):
    resolved, unknown = resolve_all(real, "gcp")
    known = {g.id for g in get_catalog().all()}
    assert len(real.offers) == 42 and len(real.skipped) == 57  # all 99 SKUs accounted for
    for offer in real.offers:
        description = offer.attributes["description"]
        card = next(card for phrase, card in REAL_CARDS if f"{phrase} GPU" in description)
        assert resolved.get(offer.key) == (card if card in known else None), description
        expected = Pricing.spot if "Spot Preemptible" in description else Pricing.on_demand
        assert offer.pricing is expected, description
        assert offer.gpu_count == 1 and offer.attributes["price_scope"] == "gpu_only"
    # only cards the catalog lacks may stay unresolved, and they are reported rather than guessed
    assert set(unknown) == {o.gpu_name for o in real.offers if o.key not in resolved}
    assert set(unknown) <= {"P100 PCIe 16GB", "P4 8GB"}
    pricing = [o.pricing for o in real.offers]
    assert (pricing.count(Pricing.on_demand), pricing.count(Pricing.spot)) == (21, 21)


def test_real_capture_prices_and_regions(real):
    offers = by_key(real)
    h200 = offers["455B-5067-C961:americas"]  # "H200 141GB GPU running in Americas"
    assert (h200.gpu_name, h200.price_per_hour, h200.pricing) == (
        "H200 SXM 141GB",
        Decimal("9.31174"),
        Pricing.on_demand,
    )
    plus = offers["7CFD-81D6-E49C:americas"]  # "Nvidia H100 80GB Plus GPU running in Americas"
    assert (plus.price_per_hour, plus.attributes["variant"]) == (Decimal("10.344275712"), "mega")
    assert offers["0008-F633-76AA:hong-kong"].price_per_hour == Decimal("0.2350321")  # nanos only
    # no serviceRegions in the export: the description's place, as a slug, is the region
    assert offers["044E-8CD0-C9A5:salt-lake-city"].attributes["location"] == "Salt Lake City"
    assert all(REGION.match(o.region) and o.attributes["region_from"] == "description" for o in real.offers)


def test_real_capture_skips_with_reasons(real):
    skipped = {line.split(":", 1)[0]: line for line in real.skipped}
    skus = {s["skuId"]: s["description"] for s in real_payload(REAL_SKUS)}
    licensing = {sku for sku, d in skus.items() if d.startswith("Licensing Fee")}
    dws = {sku for sku, d in skus.items() if "DWS Defined Duration" in d}
    assert len(licensing) == 6 and len(dws) == 18
    for sku in licensing:
        assert "not a GPU price" in skipped[sku]
    for sku in dws:  # e.g. "Nvidia H100 Mega 80GB GPU attached to DWS Defined Duration VMs running in Seoul"
        assert "DWS flex-start" in skipped[sku]
    emitted = {o.attributes["sku"] for o in real.offers}
    assert not emitted & set(skipped)
    # nothing that is a commitment, a reservation or a DWS rate became an on-demand (or any) offer
    for sku in emitted:
        assert not re.search(r"Commitment|Reserved|DWS|Licensing", skus[sku]), skus[sku]
    assert {sku for sku, d in skus.items() if d.startswith("Commitment")} <= set(skipped)
    assert {sku for sku, d in skus.items() if d.startswith("Reserved")} <= set(skipped)


def test_parse_page_without_categories_ignores_non_gpu_skus():
    page = {"skus": [{"skuId": "X", "description": "N2 Instance Core running in Americas", "pricingInfo": []}]}
    result = parse_page(page)
    assert result.offers == [] and result.skipped == []


def test_api_key_in_query_and_page_token():
    _, seen = fetch_recording(Gcp, {"GCP_API_KEY": SECRET})
    assert len(seen) == 3  # page 1, page 2 answered 429, page 2 again
    assert all(r.url.params["key"] == SECRET and r.url.params["pageSize"] == "5000" for r in seen)
    assert [r.url.params.get("pageToken") for r in seen] == [
        None,
        "CgsI0sXlygYQ4O2yHxIMMEYxMi1BNDRBLTMwOTk",
        "CgsI0sXlygYQ4O2yHxIMMEYxMi1BNDRBLTMwOTk",
    ]


def test_missing_credentials():
    assert_missing_credentials(Gcp, "GCP_API_KEY")


def test_key_not_in_errors():
    invalid = answer(400, json={"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}})
    assert_secrets_hidden(Gcp, {"GCP_API_KEY": SECRET}, invalid, status=400)
    with pytest.raises(ProviderError, match="invalid JSON") as info:
        fetch_recording(Gcp, {"GCP_API_KEY": SECRET}, mutated_cassette(Gcp, answer(200, text='{"skus": [', at=0)))
    assert SECRET not in str(info.value)


def test_truncated_json_raises():
    truncated = answer(200, text='{"skus": [{"name": "services/6F81-5844-456A/skus/E3C6', at=2)
    assert_replay_raises(Gcp, truncated, "invalid JSON")


def test_schema_change_raises():
    no_tiers = json_without(0, "skus", 1, "pricingInfo", 0, "pricingExpression", "tieredRates")
    assert_replay_drops(Gcp, no_tiers, "tieredRates")


def test_bad_price_raises():
    path = ("skus", 1, "pricingInfo", 0, "pricingExpression", "tieredRates", 0, "unitPrice", "units")
    assert_replay_drops(Gcp, json_with(0, *path, value="two"), "not a number")


def test_repeated_500_raises():
    error = assert_replay_raises(Gcp, answer(500, text="backend error"), "gave up after 4 attempts", GCP_API_KEY=SECRET)
    assert SECRET not in error
