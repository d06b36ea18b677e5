"""PPIO adapter against its bundled cassette (providers/cassettes/ppio.json): Novita's parser, PPIO's fields."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters import novita
from providers.adapters.ppio import URL, Ppio
from providers.contract import Pricing
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_without,
    replay_fixture,
)

SECRET = "sk_ppio_0f9e8d7c6b5a"

result = replay_fixture(Ppio)


def test_integrity(result):
    resolved = assert_integrity(
        result, expected_gpus={"RTX4090-24GB", "H100-SXM-80GB", "A100-SXM-80GB", "L40S-48GB", "H20-SXM-96GB"}
    )
    assert resolved["102:cn-hz-01"] == "H100-SXM-80GB"
    assert len(result.offers) == 8


def test_hundred_thousandths_of_a_dollar_per_gpu(result):
    h100 = by_key(result)["102:cn-hz-01"]
    assert (h100.gpu_count, h100.price_per_hour, h100.currency, h100.pricing) == (
        1,
        Decimal("2.15"),
        "USD",
        Pricing.on_demand,
    )
    assert "102:cn-hz-01:spot" not in by_key(result)  # billingMethods without spot
    spot = by_key(result)["101:cn-qd-01:spot"]
    assert (spot.pricing, spot.price_per_hour, spot.region) == (Pricing.spot, Decimal("0.15"), "cn-qd-01")


def test_ppio_fields(result):
    offers = by_key(result)
    assert offers["103:cn-qd-01"].available is False  # canBuy false
    assert offers["104:cn-hz-01"].attributes["promotional"] is True  # activityProduct
    assert offers["105:cn-bj-01"].available is True


def test_malformed_product_dropped_not_the_run(result):
    assert any(s.startswith("data[5]") and "price" in s for s in result.skipped)  # no price field at all
    assert "107: no price" in result.skipped
    assert "106:cn-hz-01" not in by_key(result)


def test_parser_is_novitas():
    import providers.adapters.ppio as ppio

    assert ppio.parse is novita.parse  # type: ignore[attr-defined]  # PPIO calls Novita's parser by name


def test_bearer_and_every_product_asked_for():
    _, seen = fetch_recording(Ppio, {"PPIO_API_KEY": SECRET})
    assert [str(r.url) for r in seen] == [URL]
    assert seen[0].headers["authorization"] == f"Bearer {SECRET}"


def test_missing_credentials():
    assert_missing_credentials(Ppio, "PPIO_API_KEY")


def test_secret_not_in_errors():
    assert_secrets_hidden(Ppio, {"PPIO_API_KEY": SECRET}, answer(401, json={"msg": f"bad {SECRET}"}), status=401)


def test_envelope_change_fails_the_run():
    assert_replay_raises(Ppio, json_without(0, "data"), "data")
    assert_replay_raises(Ppio, answer(200, text='{"data": ['), "invalid JSON")
