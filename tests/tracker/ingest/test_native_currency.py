"""Native currency on SQLite and Postgres: a quote keeps its amount, currency and the rate of its day; an
FX-only move writes a row counted apart from price changes; re-fetched rates move no USD history; an
unknown, ambiguous or unconvertible currency sets that offer aside, never as USD."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from sqlalchemy import select

from providers.contract import Pricing
from providers.fx.contract import DailyRates
from tests.factories.offers import batch, do_ingest, offer
from tracker.catalog.gpus import get_catalog
from tracker.ingest.batch import ingest
from tracker.ingest.fx import MAX_RATE_AGE, store_rates
from tracker.ingest.validate import validate_batch
from tracker.market.offers import OfferFilters, current_offers, offer_row
from tracker.storage.engine import session_scope
from tracker.storage.tables import FxRate, Offer, OfferPrice, ScrapeRun

DAY = date(2026, 11, 1)  # the FakeClock's first day


def put_rates(engine, clock, day: date, **rates: str) -> None:
    with session_scope(engine) as s:
        store_rates(s, [DailyRates("ecb", day, {c: Decimal(r) for c, r in rates.items()})], clock())


def history(engine, key: str) -> list[tuple]:
    """(kind, currency, native/h, USD/h, USD/GPU-h, rate, rate day, open) of each price row, oldest first."""
    stmt = (
        select(OfferPrice)
        .join(Offer, Offer.id == OfferPrice.offer_id)
        .where(Offer.offer_key == key)
        .order_by(OfferPrice.valid_from)
    )
    with session_scope(engine) as s:
        return [
            (
                p.change_kind,
                p.currency,
                p.price_native_per_hour,
                p.price_per_hour,
                p.price_per_gpu_hour,
                p.fx_rate,
                p.fx_date,
                p.valid_to is None,
            )
            for p in s.scalars(stmt)
        ]


def test_a_eur_quote_shows_its_native_price_currency_and_usd_at_the_recorded_rate(engine, settings, clock):
    put_rates(engine, clock, DAY, EUR="1.0800", CAD="0.72")
    report = do_ingest(
        engine, settings, clock, batch(offer("eu", "17.00", count=8, currency="EUR"), offer("us", "2.00"))
    )
    assert (report.status, report.offers_valid, report.price_rows, report.fx_rows) == ("ok", 2, 2, 0)
    with session_scope(engine) as s:
        rows = {r["offer_key"]: r for r in map(offer_row, current_offers(s, OfferFilters()))}
    eu = rows["eu"]
    assert (eu["currency"], eu["price_native_per_hour"], eu["price_native_per_gpu_hour"]) == (
        "EUR",
        Decimal("17.000000"),
        Decimal("2.125000"),
    )
    assert (eu["fx_rate"], eu["fx_date"], eu["fx_source"]) == (Decimal("1.08"), DAY, "ecb")
    # USD at the recorded rate: 17 × 1.08 = 18.36 per hour, / 8 GPUs = 2.295 per GPU-hour.
    assert (eu["price_per_hour"], eu["price_per_gpu_hour"]) == (Decimal("18.360000"), Decimal("2.295000"))
    us = rows["us"]
    assert (us["currency"], us["price_native_per_hour"], us["price_per_hour"]) == ("USD", Decimal(2), Decimal(2))
    assert (us["fx_rate"], us["fx_date"], us["fx_source"]) == (None, None, None)
    assert history(engine, "eu") == [
        ("price", "EUR", Decimal("17"), Decimal("18.36"), Decimal("2.295"), Decimal("1.08"), DAY, True)
    ]


def test_rescraping_after_a_rate_change_writes_an_fx_only_row_not_counted_as_a_price_change(engine, settings, clock):
    put_rates(engine, clock, DAY, EUR="1.08")
    do_ingest(engine, settings, clock, batch(offer("eu", "2.00", currency="EUR"), offer("us", "3.00")))
    clock.advance(days=1)
    put_rates(engine, clock, DAY + timedelta(days=1), EUR="1.10")
    report = do_ingest(engine, settings, clock, batch(offer("eu", "2.00", currency="EUR"), offer("us", "3.00")))
    assert (report.price_rows, report.fx_rows, report.offers_new) == (0, 1, 0)
    with session_scope(engine) as s:
        run = s.get_one(ScrapeRun, report.run_id)
        assert (run.price_rows, run.fx_rows) == (0, 1)
        eu = s.scalars(select(Offer).where(Offer.offer_key == "eu")).one()
        assert (eu.price_per_hour, eu.fx_rate, eu.fx_date) == (Decimal("2.2"), Decimal("1.1"), DAY + timedelta(days=1))
    assert history(engine, "eu") == [
        ("price", "EUR", Decimal(2), Decimal("2.16"), Decimal("2.16"), Decimal("1.08"), DAY, False),
        ("fx", "EUR", Decimal(2), Decimal("2.2"), Decimal("2.2"), Decimal("1.1"), DAY + timedelta(days=1), True),
    ]
    assert len(history(engine, "us")) == 1  # a USD quote never moves with a rate
    # A real change of the quote on a later day is a price row, whatever the rate did meanwhile.
    clock.advance(days=1)
    put_rates(engine, clock, DAY + timedelta(days=2), EUR="1.12")
    report = do_ingest(engine, settings, clock, batch(offer("eu", "1.90", currency="EUR"), offer("us", "3.00")))
    assert (report.price_rows, report.fx_rows) == (1, 0)
    assert history(engine, "eu")[-1][:4] == ("price", "EUR", Decimal("1.9"), Decimal("2.128"))


def test_the_same_quote_and_the_same_usd_figure_write_no_row(engine, settings, clock):
    put_rates(engine, clock, DAY, EUR="1.08")
    do_ingest(engine, settings, clock, batch(offer("eu", "2.00", currency="EUR")))
    clock.advance(days=1)
    # Another rate, but the same micro-dollar figure: nothing to record.
    put_rates(engine, clock, DAY + timedelta(days=1), EUR="1.0800000001")
    report = do_ingest(engine, settings, clock, batch(offer("eu", "2.00", currency="EUR")))
    assert (report.price_rows, report.fx_rows) == (0, 0)
    assert len(history(engine, "eu")) == 1


def test_usd_history_is_unchanged_after_rates_are_refetched_or_revised(engine, settings, clock):
    put_rates(engine, clock, DAY, EUR="1.08")
    do_ingest(engine, settings, clock, batch(offer("eu", "2.00", currency="EUR"), offer("us", "3.00")))
    before = history(engine, "eu") + history(engine, "us")
    clock.advance(hours=2)
    with session_scope(engine) as s:  # the same day again, then the source's correction of it
        (same,) = store_rates(s, [DailyRates("ecb", DAY, {"EUR": Decimal("1.08")})], clock())
        (fixed,) = store_rates(s, [DailyRates("ecb", DAY, {"EUR": Decimal("1.09"), "GBP": Decimal("1.3")})], clock())
    assert (same.inserted, same.revised, same.unchanged) == (0, 0, 1)
    assert (fixed.inserted, fixed.revised, fixed.unchanged) == (1, 1, 0)
    with session_scope(engine) as s:
        assert s.scalar(select(FxRate.usd_per_unit).where(FxRate.currency == "EUR")) == Decimal("1.09")
    assert history(engine, "eu") + history(engine, "us") == before  # nothing stored was recomputed
    # The correction applies to the next observation: an FX-only row at the corrected rate.
    report = do_ingest(engine, settings, clock, batch(offer("eu", "2.00", currency="EUR"), offer("us", "3.00")))
    assert (report.price_rows, report.fx_rows) == (0, 1)
    assert history(engine, "eu")[-1][3] == Decimal("2.18")


def test_unknown_ambiguous_or_unconvertible_currencies_are_rejected_per_offer(engine, settings, clock):
    put_rates(engine, clock, DAY, EUR="1.08")
    observed, clock.now = clock.now, clock.now + timedelta(days=3)  # fetched then: a rate is never dated ahead
    put_rates(engine, clock, DAY + timedelta(days=3), CHF="1.25")  # only after the observation's day
    clock.now = observed
    report = do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("eur", "2.00", currency="EUR"),
            offer("lower", "2.00", currency=" eur "),
            offer("usd", "2.00"),
            offer("xyz", "2.00", currency="XYZ"),
            offer("dollar", "2.00", currency="$"),
            offer("none", "2.00", currency=""),
            offer("euro", "2.00", currency="euro"),
            offer("chf", "2.00", currency="CHF"),
        ),
    )
    assert (report.status, report.offers_seen, report.offers_valid) == ("ok", 8, 3)
    reasons = dict(r.split(": ", 1) for r in report.invalid)
    assert set(reasons) == {"xyz", "dollar", "none", "euro", "chf"}
    assert "no exchange rate for XYZ is stored" in reasons["xyz"]
    assert "'$' is not an ISO 4217 code (ambiguous or unknown)" in reasons["dollar"]
    assert "'(none)' is not an ISO 4217 code" in reasons["none"]
    assert "'euro' is not an ISO 4217 code" in reasons["euro"]
    assert f"no CHF rate on or before {DAY} is stored" in reasons["chf"]
    with session_scope(engine) as s:
        stored = dict(s.execute(select(Offer.offer_key, Offer.currency)).all())
        assert stored == {"eur": "EUR", "lower": "EUR", "usd": "USD"}  # never a silent USD
        assert s.get_one(ScrapeRun, report.run_id).invalid_offers == 5


def test_a_rate_too_old_sets_a_live_offer_aside_but_a_demo_replay_uses_it_with_its_date(engine, settings, clock):
    old = DAY - MAX_RATE_AGE - timedelta(days=1)
    put_rates(engine, clock, old, EUR="1.05")
    report = do_ingest(engine, settings, clock, batch(offer("eu", "2.00", currency="EUR"), offer("us", "2.00")))
    assert report.offers_valid == 1
    assert report.invalid == [
        f"eu: the latest EUR rate (ecb, {old}) is 8 days older than the observation; at most 7 are accepted"
    ]
    with session_scope(engine) as s:
        run = ScrapeRun(provider="demo-eu", status="running", started_at=clock(), source="demo")
        s.add(run)
        s.flush()
        demo = ingest(
            s,
            run,
            batch(offer("eu", "2.00", currency="EUR")),
            catalog=get_catalog(),
            settings=settings,
            observed_at=clock(),
        )
        assert (demo.offers_valid, demo.invalid) == (1, [])
        eu = s.scalars(select(Offer).where(Offer.provider == "demo-eu")).one()
        assert (eu.price_per_hour, eu.fx_date, eu.demo) == (Decimal("2.1"), old, True)


def test_the_sanity_ceiling_applies_to_the_usd_figure(engine, settings, clock):
    put_rates(engine, clock, DAY, JPY="0.0064", EUR="1.08")
    report = do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("yen", "20000", count=8, currency="JPY"),  # ¥2,500/GPU-hour is $16, not $2,500
            offer("dear", "190", currency="EUR"),  # €190 is $205.20: above the $200 ceiling
        ),
    )
    assert report.offers_valid == 1
    assert report.invalid == ["dear: $205.200000/GPU-hour is above the sanity ceiling $200"]
    with session_scope(engine) as s:
        yen = s.scalars(select(Offer).where(Offer.offer_key == "yen")).one()
        assert (yen.price_per_gpu_hour, yen.price_native_per_gpu_hour) == (Decimal(16), Decimal(2500))


def test_without_rates_only_usd_quotes_validate(settings):
    prepared = validate_batch(batch(offer("eu", "2.00", currency="EUR"), offer("us", "2.00")), get_catalog(), settings)
    assert [v.scraped.key for v in prepared.valid] == ["us"]
    assert prepared.invalid == ["eu: no exchange rate for EUR was looked up for this batch"]


def test_a_reopened_eur_offer_is_a_price_row_at_the_rate_of_its_return(engine, settings, clock):
    put_rates(engine, clock, DAY, EUR="1.08")
    do_ingest(engine, settings, clock, batch(offer("eu", "2.00", currency="EUR"), offer("us", "3.00")))
    clock.advance(hours=1)
    do_ingest(engine, settings, clock, batch(offer("us", "3.00")))  # delisted
    clock.advance(days=1)
    put_rates(engine, clock, DAY + timedelta(days=1), EUR="1.10")
    report = do_ingest(engine, settings, clock, batch(offer("eu", "2.00", currency="EUR"), offer("us", "3.00")))
    assert (report.offers_reopened, report.price_rows, report.fx_rows) == (1, 1, 0)
    assert [h[0] for h in history(engine, "eu")] == ["price", "price"]
    assert history(engine, "eu")[-1][3] == Decimal("2.2")


def test_a_reservation_without_its_term_or_a_term_without_a_reservation_is_set_aside(settings):
    # Reservations are kept apart from on-demand by their term; an offer that breaks the pairing would
    # be ranked against the wrong prices, so it is invalid with the reason, and the rest validate.
    prepared = validate_batch(
        batch(
            offer("ok-reserved", "2.00", pricing=Pricing.reserved, reserved_term="1y"),
            offer("no-term", "2.00", pricing=Pricing.reserved),
            offer("term-on-demand", "2.00", reserved_term="1mo"),
            offer("ok-on-demand", "2.00"),
        ),
        get_catalog(),
        settings,
    )
    assert [v.scraped.key for v in prepared.valid] == ["ok-reserved", "ok-on-demand"]
    assert [reason.split(":")[0] for reason in prepared.invalid] == ["no-term", "term-on-demand"]
