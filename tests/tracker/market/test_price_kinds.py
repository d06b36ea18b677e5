"""Asking, transacted and floor prices stay apart (tracker.market.price_kinds): the market, its history, the
ranking and the offer list count orderable asking prices unless asked; a price row keeps its own kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from sqlalchemy import select

from providers.contract import PriceKind
from tests.factories.offers import batch, do_ingest, offer
from tracker.market.live import fresh_mask
from tracker.market.offers import OfferListing, current_offers, offer_row
from tracker.market.price_kinds import is_orderable_asking, orderable_asking
from tracker.market.rank import RankFilters, filter_mask
from tracker.market.service import market_history, market_snapshot
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferPrice

NOW = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)
H100 = "H100-SXM-80GB"


def _market(engine, settings, clock):
    clock.now = NOW
    offers = batch(
        offer("ask", "2.00"),
        offer("ask2", "3.00"),
        offer("rented", "0.50", price_kind=PriceKind.transacted, orderable=False),
        offer("from", "1.00", price_kind=PriceKind.floor, orderable=False),
        offer("closed", "0.80", orderable=False),  # an asking price the provider closed to orders
    )
    do_ingest(engine, settings, clock, offers)


def test_the_predicate_reads_rows_offers_and_dicts():
    assert is_orderable_asking(offer("a", "1"))
    assert not is_orderable_asking(offer("b", "1", price_kind=PriceKind.transacted, orderable=False))
    assert not is_orderable_asking({"price_kind": "asking", "orderable": False})
    assert is_orderable_asking({})  # written before kinds were kept: read as asking then, and now


def test_the_market_counts_orderable_asking_prices_only(engine, settings, clock):
    _market(engine, settings, clock)
    with session_scope(engine) as s:
        (card,) = market_snapshot(engine, s, settings, NOW, gpu_ids=[H100])["cards"]
    # Before price kinds, the $0.50 rented rate and the $1.00 floor set the minimum and the median.
    assert (card["offers"], card["min"], card["max"]) == (2, Decimal("2.000000"), Decimal("3.000000"))


def test_the_history_reads_each_rows_own_kind(engine, settings, clock):
    # One offer: asking $2.00, then rented at $1.00 for a day, then free again at $2.00.
    clock.now = NOW - timedelta(days=3)
    do_ingest(engine, settings, clock, batch(offer("m", "2.00")))
    clock.now = NOW - timedelta(days=2)
    do_ingest(engine, settings, clock, batch(offer("m", "1.00", price_kind=PriceKind.transacted, orderable=False)))
    clock.now = NOW - timedelta(days=1)
    do_ingest(engine, settings, clock, batch(offer("m", "2.00")))
    with session_scope(engine) as s:
        rows = s.execute(select(OfferPrice.price_kind, OfferPrice.orderable).order_by(OfferPrice.valid_from)).all()
        assert [tuple(r) for r in rows] == [("asking", True), ("transacted", False), ("asking", True)]
        buckets = market_history(
            s,
            settings,
            NOW,
            gpu_ids=[H100],
            pricing="on_demand",
            interval="1d",
            start=NOW - timedelta(days=3),
            end=NOW - timedelta(hours=1),
        )
    assert buckets and all(b["min"] == Decimal("2.000000") for b in buckets)  # the rented day never counts


def test_a_change_of_kind_alone_is_a_new_price_row(engine, settings, clock):
    clock.now = NOW - timedelta(hours=2)
    do_ingest(engine, settings, clock, batch(offer("m", "2.00")))
    clock.now = NOW - timedelta(hours=1)
    do_ingest(engine, settings, clock, batch(offer("m", "2.00", orderable=False)))
    with session_scope(engine) as s:
        assert s.scalar(select(Offer.orderable)) is False
        assert len(s.scalars(select(OfferPrice.id)).all()) == 2
        assert (
            s.scalar(select(OfferPrice.id).where(orderable_asking(OfferPrice), OfferPrice.valid_to.is_(None))) is None
        )


def test_the_ranking_leaves_other_kinds_out_unless_asked(engine, settings, clock, live):
    _market(engine, settings, clock)
    with session_scope(engine) as s:
        _, table = live.frame(engine, s)
        fresh = fresh_mask(table, NOW, settings)
        default = set(table["offer_key"][filter_mask(table, fresh, RankFilters())].tolist())
        trades = RankFilters(price_kinds=[PriceKind.transacted])
        asked = set(table["offer_key"][filter_mask(table, fresh, trades)].tolist())
    assert default == {"ask", "ask2"}
    assert asked == {"rented"}


def test_offer_rows_say_the_kind_and_the_list_filters_on_it(engine, settings, clock):
    _market(engine, settings, clock)
    with session_scope(engine) as s:
        default = {o.offer_key for o in current_offers(s, OfferListing())}
        every = OfferListing(price_kinds=list(PriceKind))
        rows = {r["offer_key"]: r for r in map(offer_row, current_offers(s, every))}
    assert default == {"ask", "ask2"}
    assert {k: (r["price_kind"], r["orderable"]) for k, r in rows.items()} == {
        "ask": ("asking", True),
        "ask2": ("asking", True),
        "rented": ("transacted", False),
        "from": ("floor", False),
        "closed": ("asking", False),
    }


def test_the_live_tables_mask_is_the_one_rule_row_by_row():
    """`kinds_mask` (vectorised, every ranking runs it over every live offer) agrees with
    `is_orderable_asking` on every combination, rows without a kind or a flag included."""
    import numpy as np

    from tracker.market.price_kinds import is_orderable_asking, kinds_mask

    kinds = ["asking", "transacted", "floor", None]
    flags = [True, False, None]
    pairs = [(k, o) for k in kinds for o in flags]
    price_kind = np.array([k for k, _ in pairs], dtype=object)
    orderable = np.array([o for _, o in pairs], dtype=object)
    expected = [is_orderable_asking({"price_kind": k, "orderable": o}) for k, o in pairs]
    assert kinds_mask(price_kind, orderable, None).tolist() == expected
    typed = np.array([o is not False for _, o in pairs], dtype=bool)  # the live table's bool column
    assert kinds_mask(price_kind, typed, None).tolist() == expected
    assert kinds_mask(price_kind, orderable, ["transacted", "floor"]).tolist() == [
        k in ("transacted", "floor") for k, _ in pairs
    ]
