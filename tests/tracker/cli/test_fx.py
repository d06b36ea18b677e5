"""`gpu-tracker fx update|rates` and the native-currency fields of `gpu-tracker offers --json`, on both backends."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

from providers.fx.contract import DailyRates
from tests.factories.offers import batch, do_ingest, offer
from tracker.ingest.fx import store_rates
from tracker.storage.engine import session_scope


def test_update_demo_then_rates_json(cli):
    result = cli("fx", "update", "--demo", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["inserted"] == 29
    result = cli("fx", "rates", "--json", "--currency", "eur", "--currency", "JPY")
    assert result.exit_code == 0, result.output
    rows = {r["currency"]: r for r in json.loads(result.output)}
    assert set(rows) == {"EUR", "JPY"} and rows["EUR"]["usd_per_unit"] == 1.1476
    assert rows["EUR"]["date"] == "2026-03-13" and rows["EUR"]["source"] == "ecb"
    assert json.loads(cli("fx", "rates", "--json", "--date", "2026-03-12").output) == []
    table = cli("fx", "rates")
    assert table.exit_code == 0 and "EUR" in table.output and "1.14760000" in table.output


def test_bad_input_is_one_line_and_non_zero(cli):
    for args, message in (
        (("fx", "rates", "--date", "13/03/2026"), "--date must be a day as YYYY-MM-DD"),
        (("fx", "rates", "--currency", "€"), "is not an ISO 4217 code"),
        (("fx", "update", "--source", "boc"), "unknown rate source 'boc'"),
    ):
        result = cli(*args)
        assert result.exit_code == 2 and message in result.output, result.output
        assert "Traceback" not in result.output


def test_offers_json_carries_the_native_price_currency_rate_and_its_day(cli, engine, settings, clock):
    with session_scope(engine) as s:
        store_rates(s, [DailyRates("ecb", date(2026, 10, 30), {"EUR": Decimal("1.08")})], clock())
    do_ingest(engine, settings, clock, batch(offer("eu", "4.00", count=2, currency="EUR")))
    result = cli("offers", "--json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)
    assert (row["currency"], row["price_native_per_hour"], row["price_native_per_gpu_hour"]) == ("EUR", 4.0, 2.0)
    assert (row["fx_rate"], row["fx_date"], row["fx_source"]) == (1.08, "2026-10-30", "ecb")
    assert (row["price_per_hour"], row["price_per_gpu_hour"]) == (4.32, 2.16)
