"""AWS price-list CSV adapter against its bundled schema-faithful cassette."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from providers.adapters.aws import INSTANCES, REGIONS, URL, Aws, parse_csv
from providers.cassette import bundled_cassette
from providers.contract import Pricing, ProviderKind, ScrapeResult
from providers.registry import get_provider
from tests.factories.cassettes import (
    Mutation,
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    replay_fixture,
)
from tracker.catalog.gpus import get_catalog


def us_east_csv() -> str:
    raw = json.loads(bundled_cassette("aws").read_text())
    return next(i["response"]["text"] for i in raw["interactions"] if "/us-east-1/" in i["request"]["url"])


def csv_body(region: str, text: str, status: int = 200) -> Mutation:
    """A mutation: `region`'s price list is answered `status` with `text`."""

    def mutate(raw: dict[str, Any]) -> None:
        for interaction in raw["interactions"]:
            if f"/{region}/" in interaction["request"]["url"]:
                interaction["response"] = {"status": status, "headers": {"content-type": "text/csv"}, "text": text}

    return mutate


result = replay_fixture(Aws)


@pytest.fixture(scope="module")
def offers(result: ScrapeResult) -> dict[str, Any]:
    return by_key(result)


def test_registered_without_credentials() -> None:
    assert get_provider("aws") is Aws
    assert Aws.credentials == ()
    assert Aws.kind is ProviderKind.cloud


def test_integrity(result: ScrapeResult) -> None:
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "A100-SXM-40GB",
            "A100-SXM-80GB",
            "B200-SXM-180GB",
            "V100-SXM-16GB",
            "V100-SXM-32GB",
            "A10G-24GB",
            "L4-24GB",
            "L40S-48GB",
            "T4-16GB",
        },
        allowed_unknown={"Radeon Pro V520 8GB"},
        min_offers=19,
    )
    assert resolved["p4de.24xlarge:us-east-1:on_demand"] == "A100-SXM-80GB"
    assert resolved["p4d.24xlarge:eu-west-1:on_demand"] == "A100-SXM-40GB"
    assert resolved["g6.xlarge:us-east-1:on_demand"] == "L4-24GB"
    assert len(result.offers) == 19


def test_per_instance_price(offers: dict[str, Any]) -> None:
    p5 = offers["p5.48xlarge:us-east-1:on_demand"]
    assert p5.price_per_hour == Decimal("55.04")
    assert p5.price_per_gpu_hour == Decimal("6.88")
    assert (p5.gpu_name, p5.gpu_count, p5.gpu_memory_gb) == ("H100 SXM 80GB", Decimal(8), Decimal(80))
    assert (p5.vcpus, p5.ram_gb, p5.instance_type) == (Decimal(192), Decimal(2048), "p5.48xlarge")
    assert p5.attributes == {"location": "US East (N. Virginia)"}
    assert offers["g5.12xlarge:us-east-1:on_demand"].price_per_gpu_hour == Decimal("1.418")


def test_reserved_no_upfront_only_and_no_spot(result: ScrapeResult, offers: dict[str, Any]) -> None:
    one = offers["p5.48xlarge:us-east-1:reserved:1y"]
    three = offers["p5.48xlarge:us-east-1:reserved:3y"]
    assert (one.pricing, one.reserved_term, one.price_per_hour) == (Pricing.reserved, "1y", Decimal("34.69"))
    assert (three.reserved_term, three.price_per_hour) == ("3y", Decimal("24.15"))
    assert one.attributes["purchase_option"] == "No Upfront"
    # All Upfront (0.0 hourly) and convertible (36.88) rows are not offers
    reserved = [o for o in result.offers if o.pricing is Pricing.reserved]
    assert len(reserved) == 2
    assert Pricing.spot not in {o.pricing for o in result.offers}


def test_filtered_rows(result: ScrapeResult, offers: dict[str, Any]) -> None:
    # Windows 71.48, Dedicated 60.544, UnusedCapacityReservation, SQL Web 56.24, CapacityBlock p5en: none kept
    prices = {o.price_per_hour for o in result.offers}
    assert not prices & {Decimal("71.48"), Decimal("60.544"), Decimal("56.24"), Decimal("31.464")}
    assert "p5en.48xlarge:us-east-1:on_demand" not in offers
    assert "m5.large:us-east-1:on_demand" not in offers and "c5.xlarge:eu-west-1:on_demand" not in offers
    assert sorted(result.skipped) == [
        "g7e.2xlarge in us-east-1: 1 GPU(s), not in aws.INSTANCES",
        "p5e.48xlarge in us-east-1: on_demand price 0",
    ]


def test_fractional_g6f(offers: dict[str, Any]) -> None:
    g6f = offers["g6f.large:us-east-1:on_demand"]
    assert g6f.gpu_count == Decimal("0.125")
    assert g6f.gpu_memory_gb == Decimal(3)
    assert g6f.price_per_gpu_hour == Decimal("1.7016")
    assert g6f.attributes["fractional"] is True
    assert get_catalog().normalize(g6f.gpu_name).id == "L4-24GB"


def test_local_zone_rows_ignored(offers: dict[str, Any]) -> None:
    # the Boston Local Zone row (0.631) shares region code us-east-1 and comes first in the file
    assert offers["g4dn.xlarge:us-east-1:on_demand"].price_per_hour == Decimal("0.526")


def test_quoted_newline_cell(offers: dict[str, Any]) -> None:
    assert offers["g4dn.2xlarge:us-east-1:on_demand"].price_per_hour == Decimal("0.752")


def test_regions_retry_and_no_auth() -> None:
    result, requests = fetch_recording(Aws)
    assert {o.region for o in result.offers} == {"us-east-1", "eu-west-1"}
    assert all(o.available is None for o in result.offers)
    urls = [str(r.url) for r in requests]
    assert sorted(set(urls)) == sorted(URL.format(region=r) for r in REGIONS)
    assert urls.count(URL.format(region="eu-west-1")) == 2  # 503, then 200
    assert "g6e.12xlarge:eu-west-1:on_demand" in {o.key for o in result.offers}
    assert all("authorization" not in r.headers for r in requests)


def test_crlf_line_endings() -> None:
    text = us_east_csv().replace("\n", "\r\n")
    result = parse_csv(text, "us-east-1")
    assert len(result.offers) == 16
    assert {o.key: o.price_per_hour for o in result.offers}["g5.xlarge:us-east-1:on_demand"] == Decimal("1.006")


def test_instance_table_is_consistent() -> None:
    for itype, gpu in INSTANCES.items():
        assert "." in itype and gpu.count > 0 and gpu.memory_gb > 0, itype
        if gpu.count < 1:
            assert gpu.offered_memory_gb < gpu.memory_gb, itype


def test_truncated_csv_raises() -> None:
    text = us_east_csv()
    cut = text[: text.index("g5.12xlarge") + 4]  # stops inside a quoted cell
    assert_replay_raises(Aws, csv_body("us-east-1", cut), "truncated price list for us-east-1")


def test_missing_column_raises() -> None:
    text = us_east_csv().replace('"PricePerUnit"', '"PricePerUnitUSD"', 1)
    assert_replay_raises(Aws, csv_body("us-east-1", text), r"lacks columns \['PricePerUnit'\]")


def test_non_csv_body_raises() -> None:
    html = "\n".join(["<html>", "<body>", "maintenance", *["<p>please wait</p>"] * 12, "</body>", "</html>"])
    assert_replay_raises(Aws, csv_body("us-east-1", html), "no 'SKU' header")
    assert_replay_raises(Aws, csv_body("us-east-1", ""), "no header row")


def test_row_width_change_raises() -> None:
    text = us_east_csv().replace('"g5.xlarge","Yes"', '"g5.xlarge","Yes","extra"', 1)
    assert_replay_raises(Aws, csv_body("us-east-1", text), "cells")


def test_repeated_500_raises() -> None:
    assert_replay_raises(Aws, csv_body("us-east-1", "internal error", status=500), "gave up after 4 attempts: HTTP 500")


def test_client_error_raises_at_once() -> None:
    forbidden = csv_body("ap-south-1", "<Error><Code>AccessDenied</Code></Error>", status=403)
    assert_replay_raises(Aws, forbidden, r"HTTP 403 .*AccessDenied")
