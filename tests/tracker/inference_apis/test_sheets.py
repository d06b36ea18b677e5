"""The serverless API price sheet (tracker.inference_apis.sheets): sourced, dated, validated."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from tracker.estimate import all_models
from tracker.inference_apis.compare import api_alternatives
from tracker.inference_apis.sheets import STALE_AFTER_DAYS, SheetError, load_sheet, parse_sheet, prices_for

GOOD = {
    "provider": "p",
    "model": "llama-3.1-8b",
    "api_model": "m",
    "input_usd_per_mtok": "0.1",
    "output_usd_per_mtok": "0.2",
    "source": "provider",
    "source_url": "https://example.com/pricing",
}


def test_the_shipped_sheet_names_catalog_models_and_sources():
    sheet = load_sheet()
    catalog = {m.id for m in all_models()}
    assert {p.model for p in sheet.prices} <= catalog
    assert all(p.source_url.startswith("https://") and p.source in ("provider", "listing") for p in sheet.prices)
    # The models the issue names have at least one published API price each.
    for model in ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen2.5-72b", "mixtral-8x7b"):
        assert prices_for(model), model


def test_prices_for_sorts_cheapest_output_first():
    outs = [p.output_usd_per_mtok for p in prices_for("llama-3.1-70b")]
    assert outs == sorted(outs) and len(outs) >= 3


def test_staleness_is_the_age_of_the_read():
    sheet = load_sheet()
    read = datetime.combine(sheet.read_on, datetime.min.time(), UTC)
    assert not sheet.stale(read + timedelta(days=STALE_AFTER_DAYS))
    assert sheet.stale(read + timedelta(days=STALE_AFTER_DAYS + 1))
    assert sheet.age_days(read + timedelta(days=3, hours=5)) == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"input_usd_per_mtok": "abc"}, "price[0].input_usd_per_mtok: not a number"),
        ({"output_usd_per_mtok": "-1"}, "price[0].output_usd_per_mtok: must be a finite amount"),
        ({"output_usd_per_mtok": "NaN"}, "price[0].output_usd_per_mtok: must be a finite amount"),
        ({"source_url": "http://x"}, "price[0].source_url: must be an https:// address"),
        ({"source": "rumour"}, "price[0].source: must be one of provider, listing"),
        ({"model": ""}, "price[0].model: required"),
    ],
)
def test_a_bad_entry_names_itself(change, message):
    with pytest.raises(SheetError, match=message.replace(".", r"\.").replace("[", r"\[").replace("]", r"\]")):
        parse_sheet({"read_on": date(2026, 1, 1), "price": [GOOD | change]})


def test_a_sheet_needs_its_date_entries_and_no_duplicates():
    with pytest.raises(SheetError, match="read_on"):
        parse_sheet({"price": [GOOD]})
    with pytest.raises(SheetError, match="price"):
        parse_sheet({"read_on": date(2026, 1, 1), "price": []})
    with pytest.raises(SheetError, match="listed twice"):
        parse_sheet({"read_on": date(2026, 1, 1), "price": [GOOD, GOOD]})


def test_compare_without_an_offer_lists_the_apis_only():
    out = api_alternatives("llama-3.1-8b", 500, 250, None, datetime.now(UTC))
    assert out["self_hosted"] is None and out["apis"] and all(a["break_even"] is None for a in out["apis"])
    assert api_alternatives("mpt-7b", 500, 250, None, datetime.now(UTC))["cheapest_api"] is None


def test_compare_with_an_offer_gives_the_break_even_and_its_band():
    offer = {
        "provider": "x",
        "gpu": "H100-SXM-80GB",
        "gpus": 1.0,
        "pricing": "on_demand",
        "price_per_hour": 2.0,
        "usd_per_mtok": 0.185185,
        "tokens_per_second": 3000.0,
        "tokens_per_second_low": 1500.0,
        "tokens_per_second_high": 6000.0,
    }
    out = api_alternatives("llama-3.1-70b", 1000, 200, offer, datetime.now(UTC))
    assert out["self_hosted"]["machine_usd_per_month"] == Decimal("1460.000000")
    for api in out["apis"]:
        be, band = api["break_even"], api["break_even_band"]
        assert be["api_usd_per_mtok"] == api["usd_per_mtok"]
        if be["break_even_tokens_per_month"] is not None:
            assert be["break_even_tokens_per_month"] == pytest.approx(1460 / float(api["usd_per_mtok"]) * 1e6)
        # A slower machine than estimated can only lose the break-even, never gain one.
        if band["low"]["break_even_tokens_per_month"] is not None:
            assert be["break_even_tokens_per_month"] is not None
        fast, slow = band["high"]["self_host_usd_per_mtok"], band["low"]["self_host_usd_per_mtok"]
        assert fast < be["self_host_usd_per_mtok"] < slow
