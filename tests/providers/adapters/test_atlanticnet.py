"""Atlantic.Net adapter against its bundled cassette (providers/cassettes/atlanticnet.json): a price page's
schema.org JSON-LD."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.atlanticnet import URL, AtlanticNet, model_of, parse_page
from providers.contract import Pricing, ProviderError
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    replay_fixture,
)

result = replay_fixture(AtlanticNet)


def _page(*plans: dict) -> str:
    import json

    return f'<script type="application/ld+json">{json.dumps(list(plans))}</script>'


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"H100-NVL-94GB", "L40S-48GB"})
    assert resolved["AH100NVL.240GB:3y"] == "H100-NVL-94GB"
    assert len(result.offers) == 6


def test_on_demand_and_terms(result):
    offers = by_key(result)
    on_demand = offers["AH100NVL.240GB"]
    assert (on_demand.gpu_count, on_demand.price_per_hour, on_demand.currency, on_demand.pricing) == (
        1,
        Decimal("3.941"),
        "USD",
        Pricing.on_demand,
    )
    assert (on_demand.vcpus, on_demand.ram_gb, on_demand.region, on_demand.available) == (28, 240, "", None)
    one_year, three_year = offers["AH100NVL.240GB:1y"], offers["AH100NVL.240GB:3y"]
    assert (one_year.pricing, one_year.reserved_term) == (Pricing.reserved, "1y")
    assert one_year.price_per_hour == Decimal("3.155")
    assert (three_year.reserved_term, three_year.price_per_hour) == ("3y", Decimal("2.561"))
    monthly = offers["AL40S.192GB:3y"]  # quoted per month (unitCode MON): / 730
    assert monthly.price_per_hour == Decimal("790.59") / 730
    assert not any("Windows" in str(o.attributes["price_label"]) for o in result.offers)


def test_odd_blocks_and_plans_dropped_with_reason(result):
    assert any("JSON-LD block 2 is not JSON" in s for s in result.skipped)
    assert "AL40S.96GB: 'Linux – On-Demand' has no priceCurrency" in result.skipped
    assert not any(o.instance_type == "G3.64GB" for o in result.offers)  # not an Accelerated Compute plan


def test_model_and_count_from_the_page():
    assert (model_of("AH100NVL.240GB"), model_of("AL40S.192GB"), model_of("AA40.48GB")) == ("H100 NVL", "L40S", "A40")
    plan = {
        "name": "AL40S.384GB",
        "category": "Accelerated Compute",
        "additionalProperty": [{"name": "GPU", "value": "2 x NVIDIA L40S"}],
        "priceSpecification": [
            {"name": "Linux – On-Demand", "price": "3.3", "priceCurrency": "USD", "unitCode": "HUR"}
        ],
    }
    two = parse_page(_page(plan)).offers[0]
    assert (two.gpu_count, two.price_per_gpu_hour) == (2, Decimal("1.65"))
    none = plan | {"additionalProperty": [{"name": "GPU", "value": "0 x NVIDIA L40S"}]}
    assert parse_page(_page(none, plan)).skipped == ["AL40S.384GB: 0 GPUs"]


def test_page_without_catalog_fails_the_run():
    with pytest.raises(ProviderError, match="no 'Accelerated Compute'"):
        parse_page("<html><body>maintenance</body></html>")
    assert_replay_raises(AtlanticNet, answer(503, text="busy"), "HTTP 503")


def test_one_public_request():
    _, seen = fetch_recording(AtlanticNet)
    assert [str(r.url) for r in seen] == [URL] and "authorization" not in seen[0].headers
