"""SaladCloud adapter against its bundled cassette (providers/cassettes/salad.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.salad import ORGANIZATIONS_URL, Salad, parse, url_for
from providers.contract import Pricing, ProviderKind
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
    replay_fixture,
)

SECRET = "salad-live-0a1b2c3d4e5f"
RTX4090 = "ed563892-aacd-40f5-80b7-90c9be6c759b"

result = replay_fixture(Salad)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"RTX4090-24GB", "RTX3090-24GB", "RTX5090-32GB", "RTX4080-16GB", "L40S-48GB", "RTX3080-10GB"},
    )
    assert resolved[f"{RTX4090}:batch"] == "RTX4090-24GB"
    assert len(result.offers) == 6 * 4 + 1


def test_one_spot_offer_per_priority_tier(result):
    offers = by_key(result)
    tiers = {k.rsplit(":", 1)[1]: o for k, o in offers.items() if k.startswith(RTX4090)}
    assert {t: o.price_per_hour for t, o in tiers.items()} == {
        "high": Decimal("0.30"),
        "medium": Decimal("0.24"),
        "low": Decimal("0.20"),
        "batch": Decimal("0.16"),
    }
    # interruptible at every tier: never listed as on demand
    assert all(o.pricing is Pricing.spot for o in result.offers)
    high = tiers["high"]
    assert (high.gpu_count, high.gpu_memory_gb, high.region, high.available) == (1, 24, "", None)
    assert high.attributes == {
        "class_id": RTX4090,
        "priority": "high",
        "gpu_only": True,
        "high_demand": True,
        "gpu_class_type": "community",
    }


def test_odd_rows_dropped_with_reason(result):
    assert "RTX 3080 (10 GB):batch: no price" in result.skipped
    assert "RTX 2080 (8 GB): no prices listed" in result.skipped
    odd = parse({"items": [{"id": "c", "name": "RTX 4090 (24 GB)", "prices": [{"priority": "urgent", "price": "1"}]}]})
    assert odd.offers == [] and odd.skipped == ["RTX 4090 (24 GB): unknown priority 'urgent'"]


def test_key_header_and_organization_discovered():
    _, seen = fetch_recording(Salad, {"SALAD_API_KEY": SECRET})
    assert [str(r.url) for r in seen] == [ORGANIZATIONS_URL, url_for("acme-research")]
    assert all(r.headers["salad-api-key"] == SECRET for r in seen)
    assert url_for("my org/x") == "https://api.salad.com/api/public/organizations/my%20org%2Fx/gpu-classes"
    assert Salad.kind is ProviderKind.marketplace


def test_configured_organization_skips_discovery():
    _, seen = fetch_recording(Salad, {"SALAD_API_KEY": SECRET, "SALAD_ORGANIZATION": "acme-research"})
    assert [str(r.url) for r in seen] == [url_for("acme-research")]
    assert Salad.credentials == ("SALAD_API_KEY",) and Salad.optional_credentials == ("SALAD_ORGANIZATION",)


def test_key_in_no_organization_raises():
    assert_replay_raises(Salad, json_with(0, "items", value=[]), "belongs to no organization")


def test_missing_credentials():
    assert_missing_credentials(Salad, "SALAD_API_KEY")


def test_secret_not_in_errors():
    rejected = answer(401, json={"message": f"invalid key {SECRET}"}, at=0)
    assert_secrets_hidden(Salad, {"SALAD_API_KEY": SECRET}, rejected, status=401)


def test_schema_change_raises():
    assert_replay_drops(Salad, json_without(1, "items", 0, "prices"), "prices")
    assert_replay_drops(Salad, json_without(1, "items", 0, "prices", 0, "price"), "price")
