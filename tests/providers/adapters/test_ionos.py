"""IONOS Cloud adapter against its bundled cassette (providers/cassettes/ionos.json)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.ionos import PAGE_URL, Ionos, bundle_path, parse
from providers.contract import Pricing, ProviderError, ProviderKind
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    replay_fixture,
)

result = replay_fixture(Ionos)


def test_integrity(result):
    # Neither the page nor the bundle says SXM or NVL: ingest assumes the slower NVL card and notes it.
    resolved = assert_integrity(result, expected_gpus={"H200-NVL-141GB"}, provider="ionos")
    assert set(resolved.values()) == {"H200-NVL-141GB"}
    assert len(result.offers) == 12
    assert Ionos.kind == ProviderKind.cloud and Ionos.credentials == ()


def test_one_offer_per_size_and_currency_in_its_own_currency(result):
    offers = by_key(result)
    assert {k.split(":")[1] for k in offers} == {"EUR", "GBP", "USD"}
    small = offers["GPUH200S:EUR"]
    assert (small.gpu_name, small.gpu_count, small.price_per_hour, small.currency) == (
        "H200 141GB",
        1,
        Decimal(3),
        "EUR",
    )
    assert (offers["GPUH200S:GBP"].price_per_hour, offers["GPUH200S:USD"].price_per_hour) == (
        Decimal("2.554"),
        Decimal("3.261"),
    )
    big = offers["GPUH200XL:USD"]
    assert (big.gpu_count, big.price_per_gpu_hour, big.pricing, big.region) == (
        8,
        Decimal("3.261"),
        Pricing.on_demand,
        "",
    )
    assert small.attributes["product_name"] == "1h H200-S with AMD EPYC Turin and NVIDIA H200"


def test_odd_products_are_dropped_with_a_reason(result):
    assert result.skipped == [
        """GPUH200XS: not a JSON object in the bundle ('{"id":"GPUH200XS",name:"broken"}];export{t as p};\\n')""",
        "GPUH200XXL: unknown size 'XXL'",
        "GPUH200MO: unknown size 'MO'",
    ]
    monthly = parse('{"id":"GPUH200S","pu":"per month","priceLists":[]}')
    assert monthly.skipped == ["GPUH200S: priced 'per month', not per hour"]


def test_bundle_path_is_read_from_the_page():
    assert bundle_path('<script src="/assets/index-Ab_9-x.js"></script>') == "/assets/index-Ab_9-x.js"
    with pytest.raises(ProviderError, match="no /assets/index"):
        bundle_path("<html></html>")


def test_page_then_bundle_anonymously():
    _, requests = fetch_recording(Ionos)
    assert [str(r.url) for r in requests] == [PAGE_URL, f"{PAGE_URL}assets/index-B7x9QkLm.js"]
    assert not any("authorization" in r.headers for r in requests)


def test_a_changed_calculator_fails_the_run():
    assert_replay_raises(Ionos, answer(200, text="<html>new calculator</html>", at=0), "no /assets/index")
    assert_replay_raises(Ionos, answer(200, text="export{}", at=1), "no GPUH200 product")
    assert_replay_raises(Ionos, answer(404, text="gone", at=1), "HTTP 404")
