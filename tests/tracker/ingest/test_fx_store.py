"""Storing reference rates (both backends): concurrent updates of a day both succeed, a rate the column
cannot hold or dated in the future is held with its reason, a jump past the band is held and the previous
rate stays in use, and an offer whose price converts to $0 is set aside, never listed as free."""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from sqlalchemy import func, select

import tracker.ingest.fx as fx
from providers.fx.contract import DailyRates
from tests.factories.offers import batch, do_ingest, offer
from tracker.ingest.fx import store_rates
from tracker.storage.bulk import upsert_rows
from tracker.storage.engine import session_scope
from tracker.storage.tables import FxRate

DAY = date(2026, 11, 30)
FETCHED = datetime(2026, 12, 1, 12, tzinfo=UTC)


def put(engine, day: date, **rates: str):
    with session_scope(engine) as s:
        return store_rates(s, [DailyRates("ecb", day, {c: Decimal(r) for c, r in rates.items()})], FETCHED)[0]


def rows(engine) -> dict[tuple[str, date], Decimal]:
    with session_scope(engine) as s:
        return {(r.currency, r.rate_date): r.usd_per_unit for r in s.scalars(select(FxRate))}


def test_two_concurrent_updates_of_one_day_both_succeed(engine, monkeypatch):
    both_read = threading.Barrier(2, timeout=10)
    real = upsert_rows  # what fx.upsert_rows is until the wrapper replaces it

    def after_both_read(*args, **kwargs):  # each has seen no row for the day: the race that used to raise
        both_read.wait()
        return real(*args, **kwargs)

    monkeypatch.setattr(fx, "upsert_rows", after_both_read)
    errors: list[BaseException] = []

    def update(eur: str) -> None:
        try:
            put(engine, DAY, EUR=eur, JPY="0.0064")
        except BaseException as exc:  # before: IntegrityError (unique currency, day, source) for the loser
            errors.append(exc)

    threads = [threading.Thread(target=update, args=(eur,)) for eur in ("1.08", "1.09")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert errors == []
    stored = rows(engine)
    assert set(stored) == {("EUR", DAY), ("JPY", DAY)} and stored[("EUR", DAY)] in (Decimal("1.08"), Decimal("1.09"))


def test_a_rate_the_column_cannot_hold_is_held_not_raised(engine):
    report = put(engine, DAY, EUR="1.08", XAU="1e12", XAG="0", XPT="NaN")  # before: DataError on Postgres
    assert report.inserted == 1 and len(report.held) == 3
    assert all("is outside" in h for h in report.held)
    assert set(rows(engine)) == {("EUR", DAY)}


def test_a_rate_dated_in_the_future_is_held(engine):
    report = put(engine, date(2999, 1, 1), EUR="1.08")
    assert report.inserted == 0 and "dated after tomorrow" in report.held[0]
    assert rows(engine) == {}


def test_a_jump_past_the_band_is_held_and_the_previous_rate_stays(engine):
    put(engine, DAY, EUR="1.08", JPY="0.0064")
    report = put(engine, DAY + timedelta(days=1), EUR="1080", JPY="0.0065")  # a ×1000 EUR/USD
    assert (report.inserted, len(report.held)) == (1, 1)
    assert "EUR" in report.held[0] and "held" in report.held[0]
    stored = rows(engine)
    assert ("EUR", DAY + timedelta(days=1)) not in stored and stored[("JPY", DAY + timedelta(days=1))]
    with session_scope(engine) as s:
        latest = s.scalar(select(func.max(FxRate.rate_date)).where(FxRate.currency == "EUR"))
    assert latest == DAY
    # An ordinary move is stored.
    assert put(engine, DAY + timedelta(days=2), EUR="1.10").inserted == 1


def test_an_offer_whose_price_converts_to_zero_dollars_is_set_aside(engine, settings, clock):
    clock.now = datetime(2026, 12, 1, 10, tzinfo=UTC)
    put(engine, DAY, IDR="0.000000000001")  # 1e-12 USD per unit: the smallest rate the column holds
    report = do_ingest(engine, settings, clock, batch(offer("idr", "100", currency="IDR"), offer("usd", "2.00")))
    assert report.offers_valid == 1
    assert any(r.startswith("idr:") and "$0 after conversion" in r for r in report.invalid), report.invalid
