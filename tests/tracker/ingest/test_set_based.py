"""Postgres writes a batch's changes by COPY, a staging table and set-based SQL
(tracker.ingest.apply._write_set_based); SQLite, and Postgres with the set-based path switched off, by
the portable statements. Both must store the same rows, ids included, batch after batch; a failed batch
must leave the previous state, and the staging table must not outlive its batch."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from sqlalchemy import Engine, Table, select, text

import tracker.ingest.apply as apply_module
import tracker.ingest.batch as batch_module
from providers.contract import PriceKind, Pricing, ScrapeResult
from providers.fx.contract import DailyRates
from tests.conftest import _empty
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.catalog.gpus import get_catalog
from tracker.config import Settings
from tracker.ingest.batch import IngestReport, ingest
from tracker.ingest.diff import ChangeKind, Changes
from tracker.ingest.fx import store_rates
from tracker.ingest.validate import validate_batch
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferAvailability, OfferPrice, ScrapeRun

pytestmark = pytest.mark.postgres
DAY = date(2026, 11, 1)  # the FakeClock's first day
VERIFIED = {"verification": "verified", "hosting": "datacenter", "machine_id": 1}


def _batches() -> list[ScrapeResult]:
    """A sequence that takes every rule of tracker.ingest.diff at least once."""
    base = {
        "a": offer("a", "2.00", available=True),
        "b": offer("b", "3.00", available=False, attributes=dict(VERIFIED)),
        "c": offer("c", "16.00", count=8, region="us-east"),
        "d": offer("d", "1.10", gpu="A100 SXM4 80GB", pricing=Pricing.spot),
        "e": offer("e", "17.00", count=8, currency="EUR"),
        "f": offer("f", "4.00", price_kind=PriceKind.asking),
    }

    def with_(**changed: object) -> ScrapeResult:
        offers = dict(base)
        for key, value in changed.items():
            if value is None:
                offers.pop(key)
            else:
                offers[key] = value  # type: ignore[assignment]
        return batch(*offers.values())

    return [
        with_(),  # all new
        with_(),  # unchanged
        with_(  # a price, an availability flag, a GPU count, a card, a price kind and a region change
            a=offer("a", "2.20", available=True),
            b=offer("b", "3.00", available=True, attributes=dict(VERIFIED)),
            c=offer("c", "16.00", count=4, region="us-east"),
            d=offer("d", "1.10", gpu="A100 SXM4 40GB", pricing=Pricing.spot),
            f=offer("f", "4.00", price_kind=PriceKind.transacted, orderable=False),
            g=offer("g", "5.00", region="eu-west"),  # and a new offer
        ),
        with_(a=None, b=None, c=offer("c", "16.00", count=4, region="us-west")),  # two gone, a described change
        with_(b=offer("b", "3.00", available=True, attributes=VERIFIED | {"verification": "unverified"})),  # relists
        with_(),  # the EUR offer's rate moves on this batch's day (an fx row): see _run
    ]


def _run(engine: Engine, settings: Settings, clock: FakeClock) -> list[IngestReport]:
    with session_scope(engine) as s:
        store_rates(s, [DailyRates("ecb", DAY, {"EUR": Decimal("1.0800")})], clock())
    reports = []
    for i, result in enumerate(_batches()):
        if i == 5:
            clock.advance(days=1)
            with session_scope(engine) as s:
                store_rates(s, [DailyRates("ecb", clock().date(), {"EUR": Decimal("1.1000")})], clock())
        else:
            clock.advance(hours=1)
        reports.append(do_ingest(engine, settings, clock, result))
    # Two more batches at that same instant, each listing a new offer: only the new one gets history rows,
    # not the one first seen at this instant by the batch before (an offer "first seen now" but listed).
    last = _batches()[-1].offers
    reports.append(do_ingest(engine, settings, clock, batch(*last, offer("h", "6.00"))))
    reports.append(do_ingest(engine, settings, clock, batch(*last, offer("h", "6.00"), offer("i", "7.00"))))
    return reports


def _stored(engine: Engine) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the tables a batch writes, all columns, in id order."""
    out = {}
    with session_scope(engine) as s:
        for model in (Offer, OfferPrice, OfferAvailability):
            table = model.__table__
            assert isinstance(table, Table)
            out[table.name] = [tuple(r) for r in s.execute(select(table).order_by(table.c.id))]
    return out


@pytest.fixture
def pg(pg_engine: Engine, tmp_path) -> tuple[Engine, Settings]:
    _empty(pg_engine)
    return pg_engine, Settings(data_dir=tmp_path, database_url=pg_engine.url.render_as_string(hide_password=False))


def test_set_based_and_portable_writes_store_the_same_rows(pg, monkeypatch):
    engine, settings = pg
    set_based_reports = [r.as_dict() | {"run_id": None} for r in _run(engine, settings, FakeClock())]
    set_based = _stored(engine)
    _empty(engine)
    monkeypatch.setattr(apply_module, "SET_BASED_DIALECTS", frozenset())
    portable_reports = [r.as_dict() | {"run_id": None} for r in _run(engine, settings, FakeClock())]
    portable = _stored(engine)
    assert set_based_reports == portable_reports
    for table in set_based:
        assert set_based[table] == portable[table], table
    # The sequence did what it claims: every kind of write happened.
    counts = [
        (r["offers_new"], r["price_rows"], r["fx_rows"], r["offers_closed"], r["offers_reopened"])
        for r in portable_reports
    ]
    # (new, price rows, fx rows, closed, reopened) per batch of _batches, then the same-instant one
    assert counts == [
        (6, 6, 0, 0, 0),
        (0, 0, 0, 0, 0),
        (1, 5, 0, 0, 0),  # a, c, d, f: price rows; g: new (b: an availability row only)
        (0, 2, 0, 3, 0),  # d, f: back to the first card and kind; a, b, g gone (c: its region only)
        (0, 3, 0, 0, 2),  # a, b relisted; c back to 8 GPUs
        (0, 0, 1, 0, 0),  # e: only the EUR rate moved
        (1, 1, 0, 0, 0),  # h, at the same instant as the batch before
        (1, 1, 0, 0, 0),  # i, at that instant again
    ]
    assert len(set_based["offer_prices"]) == sum(r["price_rows"] + r["fx_rows"] for r in portable_reports)


def _fail_after_writes(monkeypatch) -> None:
    def boom(*args, **kwargs):
        raise RuntimeError("cost terms failed")

    monkeypatch.setattr(batch_module, "record_cost_terms", boom)


def test_a_failed_batch_leaves_the_previous_state_and_no_staging_table(pg, monkeypatch):
    engine, settings = pg
    clock = FakeClock()
    first = batch(offer("a", "2.00", available=True), offer("b", "3.00"), offer("c", "4.00"))
    do_ingest(engine, settings, clock, first)
    before = _stored(engine)
    clock.advance(hours=1)
    changed = batch(offer("a", "2.50", available=False), offer("b", "3.00"), offer("d", "5.00"))  # c gone, d new
    with monkeypatch.context() as m:
        _fail_after_writes(m)
        with pytest.raises(RuntimeError, match="cost terms failed"):
            do_ingest(engine, settings, clock, changed)
    assert _stored(engine) == before
    # The pooled connection that staged is usable for the next batch, which stages again.
    report = do_ingest(engine, settings, clock, changed)
    assert (report.status, report.offers_new, report.price_rows, report.offers_closed) == ("ok", 1, 2, 1)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM pg_class WHERE relname LIKE 'staging_%'")).scalar() == 0


def test_two_batches_in_one_transaction_each_stage_their_rewrites(pg):
    engine, settings = pg
    clock = FakeClock()
    do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "3.00")))
    with session_scope(engine) as s:
        for price in ("2.10", "2.20"):
            clock.advance(hours=1)
            run = ScrapeRun(provider="vastai", status="running", started_at=clock(), source="live")
            s.add(run)
            s.flush()
            report = ingest(
                s,
                run,
                batch(offer("a", price), offer("b", "3.00")),
                catalog=get_catalog(),
                settings=settings,
                observed_at=clock(),
            )
            assert report.price_rows == 1
    with session_scope(engine) as s:
        prices = s.execute(
            select(OfferPrice.price_per_hour, OfferPrice.valid_to.is_(None)).order_by(OfferPrice.id)
        ).all()
    assert [(p, open_) for p, open_ in prices] == [
        (Decimal("2.000000"), False),
        (Decimal("3.000000"), True),
        (Decimal("2.100000"), False),
        (Decimal("2.200000"), True),
    ]


def test_a_history_write_outside_the_rewritten_offers_is_refused_not_dropped(pg):
    engine, settings = pg
    clock = FakeClock()
    do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "3.00")))
    with session_scope(engine) as s:
        listed = apply_module.read_listed(s, "vastai")
        a, b = listed["a"].id, listed["b"].id
        valid = validate_batch(batch(offer("a", "2.50")), get_catalog(), settings, "vastai").valid
        changes = Changes(rewritten=[(a, valid[0])], prices=[(b, valid[0], ChangeKind.price)])  # b not rewritten
        with pytest.raises(RuntimeError, match="did not rewrite"):
            apply_module.write_changes(s, "vastai", changes, listed, observed_at=clock(), run_id=None, demo=False)
