"""Availability history on SQLite and Postgres: change-only rows beside the prices, written by ingest in
the same transaction; delisting closes, relisting opens; real cassettes (Vast.ai, RunPod) replayed twice
with the machine taken give the history; quality attributes on stored offers stay current."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from providers.adapters.runpod import RunPod
from providers.adapters.vastai import VastAi
from providers.cassette import Cassette, bundled_cassette
from tests.factories.cassettes import mutated_cassette
from tests.factories.offers import batch, do_ingest, offer
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferAvailability, OfferPrice


def history(engine, key: str, provider: str = "vastai") -> list[tuple[bool | None, object, object]]:
    """(available, valid_from, valid_to) of one offer's availability rows, oldest first."""
    with session_scope(engine) as s:
        offer_id = s.scalar(select(Offer.id).where(Offer.provider == provider, Offer.offer_key == key))
        rows = s.scalars(
            select(OfferAvailability).where(OfferAvailability.offer_id == offer_id).order_by(OfferAvailability.id)
        )
        return [(r.available, r.valid_from, r.valid_to) for r in rows]


def pair(*, a: bool | None, b: bool | None, a_price: str = "2.00"):
    """A batch of offers a and b with the given availability."""
    return batch(offer("a", a_price, available=a), offer("b", "3.00", available=b))


def all_rows(engine) -> int:
    with session_scope(engine) as s:
        return len(s.scalars(select(OfferAvailability.id)).all())


def test_new_offers_open_one_row_each_with_their_flag(engine, settings, clock):
    result = batch(offer("a", "2.00", available=True), offer("b", "3.00"), offer("c", "4.00", available=False))
    report = do_ingest(engine, settings, clock, result)
    assert report.availability_rows == 3
    t0 = clock()
    assert history(engine, "a") == [(True, t0, None)]
    assert history(engine, "b") == [(None, t0, None)]  # the provider does not say: recorded as such
    assert history(engine, "c") == [(False, t0, None)]


def test_same_availability_twice_writes_nothing(engine, settings, clock):
    do_ingest(engine, settings, clock, pair(a=True, b=True))
    clock.advance(minutes=10)
    report = do_ingest(engine, settings, clock, pair(a=True, b=True))
    assert report.availability_rows == 0 and all_rows(engine) == 2
    clock.advance(minutes=10)
    # A price change is a price row, not an availability row.
    report = do_ingest(engine, settings, clock, pair(a=True, b=True, a_price="1.90"))
    assert (report.price_rows, report.availability_rows) == (1, 0)


def test_flip_closes_the_open_row_and_opens_one(engine, settings, clock):
    do_ingest(engine, settings, clock, pair(a=True, b=True))
    t0 = clock()
    t1 = clock.advance(hours=1)
    report = do_ingest(engine, settings, clock, pair(a=False, b=True))
    assert (report.availability_rows, report.price_rows) == (1, 0)  # the price did not change
    assert history(engine, "a") == [(True, t0, t1), (False, t1, None)]
    assert history(engine, "b") == [(True, t0, None)]
    t2 = clock.advance(hours=1)
    do_ingest(engine, settings, clock, pair(a=None, b=True))
    assert history(engine, "a") == [(True, t0, t1), (False, t1, t2), (None, t2, None)]
    with session_scope(engine) as s:  # the offer row carries the latest flag
        assert s.scalar(select(Offer.available).where(Offer.offer_key == "a")) is None


def test_delist_closes_and_relist_opens(engine, settings, clock):
    do_ingest(engine, settings, clock, pair(a=True, b=True))
    t0 = clock()
    t1 = clock.advance(hours=1)
    report = do_ingest(engine, settings, clock, batch(offer("a", "2.00", available=True)))
    assert (report.offers_closed, report.availability_rows) == (1, 0)
    assert history(engine, "b") == [(True, t0, t1)]
    t2 = clock.advance(hours=1)
    report = do_ingest(engine, settings, clock, pair(a=True, b=False))
    assert (report.offers_reopened, report.availability_rows) == (1, 1)
    assert history(engine, "b") == [(True, t0, t1), (False, t2, None)]  # nothing covers the unlisted hour
    with session_scope(engine) as s:  # at most one open row per offer, like prices
        opened = s.scalars(select(OfferAvailability.offer_id).where(OfferAvailability.valid_to.is_(None))).all()
        assert sorted(opened) == sorted(set(opened)) and len(opened) == 2


def test_quality_attribute_changes_refresh_the_stored_offer(engine, settings, clock):
    vast = {"verification": "verified", "hosting": "datacenter", "reliability": 0.99, "machine_id": 1}
    do_ingest(engine, settings, clock, batch(offer("a", "2.00", attributes=vast), offer("b", "3.00")))
    clock.advance(minutes=10)
    # Only a non-filtered attribute changed: the stored offer is not rewritten (the old copy is kept).
    do_ingest(
        engine, settings, clock, batch(offer("a", "2.00", attributes=vast | {"machine_id": 2}), offer("b", "3.00"))
    )
    with session_scope(engine) as s:
        assert s.scalars(select(Offer.attributes).where(Offer.offer_key == "a")).one()["machine_id"] == 1
    clock.advance(minutes=10)
    deverified = vast | {"verification": "deverified"}
    report = do_ingest(engine, settings, clock, batch(offer("a", "2.00", attributes=deverified), offer("b", "3.00")))
    assert (report.price_rows, report.availability_rows) == (0, 0)
    with session_scope(engine) as s:
        assert s.scalars(select(Offer.attributes).where(Offer.offer_key == "a")).one()["verification"] == "deverified"


def _gpu_types(interaction) -> list[dict]:
    """The `gpuTypes` of a recorded RunPod answer (none for error answers and other shapes)."""
    body = interaction["response"].get("json")
    data = body.get("data") if isinstance(body, dict) else None
    types = data.get("gpuTypes") if isinstance(data, dict) else None
    return [t for t in types if isinstance(t, dict)] if isinstance(types, list) else []


def _scrape(engine, settings, clock, provider, cassette):
    (report,) = asyncio.run(run_scrape([ScrapeJob(provider, "replay", cassette)], engine, settings, clock=clock))
    assert report.status == "ok", report.error
    return report


def test_vast_cassette_rented_machine_gives_availability_history(engine, settings, clock):
    """The 8×H100 bundle stops being rentable between two replays, then comes back."""
    target = 21543210  # 8× H100 SXM, Texas

    def rented(raw):
        for bundle in raw["interactions"][0]["response"]["json"]["offers"]:
            if bundle["id"] == target:
                bundle["rentable"] = False

    _scrape(engine, settings, clock, VastAi, Cassette.load(bundled_cassette("vastai")))
    t0 = clock()
    keys = [k for k in (str(target), f"{target}:bid") if history(engine, k)]
    assert str(target) in keys and all(history(engine, k) == [(True, t0, None)] for k in keys)
    with session_scope(engine) as s:
        rows_before = len(s.scalars(select(OfferPrice.id)).all())

    t1 = clock.advance(minutes=10)
    report = _scrape(engine, settings, clock, VastAi, mutated_cassette(VastAi, rented))
    # One availability row per offer of that machine (its on-demand and any interruptible offer), no price row.
    assert report.price_rows == 0
    for key in keys:
        rows = history(engine, key)
        assert rows[0] == (True, t0, t1)
        # Vast's parser reports an unrentable bundle as unavailable; were it dropped instead, it is delisted.
        assert rows[1:] in ([(False, t1, None)], [])
    with session_scope(engine) as s:
        assert len(s.scalars(select(OfferPrice.id)).all()) == rows_before

    clock.advance(minutes=10)
    report = _scrape(engine, settings, clock, VastAi, mutated_cassette(VastAi, rented))
    assert report.availability_rows == 0  # still rented: change-only

    t3 = clock.advance(minutes=10)
    _scrape(engine, settings, clock, VastAi, Cassette.load(bundled_cassette("vastai")))
    for key in keys:
        assert history(engine, key)[-1] == (True, t3, None)


def test_runpod_cassette_stock_running_out_gives_availability_history(engine, settings, clock):
    """RunPod answers no stock for the 8× H100 SXM secure offer in one datacenter between two replays."""
    first = _scrape(engine, settings, clock, RunPod, Cassette.load(bundled_cassette("runpod")))
    assert first.availability_rows == first.offers_new > 0
    t0 = clock()
    with session_scope(engine) as s:
        key = s.scalar(
            select(Offer.offer_key)
            .where(Offer.provider == "runpod", Offer.offer_key.like("NVIDIA H100 80GB HBM3:8:secure:%"))
            .order_by(Offer.offer_key)
        )
    assert key is not None and history(engine, key, "runpod") == [(True, t0, None)]
    datacenter = key.rsplit(":", 1)[1]

    def sold_out(raw):
        for interaction in raw["interactions"]:
            variables = (interaction["request"].get("body") or {}).get("variables") or {}
            wanted = variables.get("lowestPriceInput") or {}
            if wanted.get("gpuCount") == 8 and wanted.get("dataCenterId") == datacenter:
                for gpu in _gpu_types(interaction):
                    if gpu["id"] == "NVIDIA H100 80GB HBM3":
                        gpu["lowestPrice"]["stockStatus"] = None

    def low_stock(raw):  # still in stock, just less: not an availability change
        for interaction in raw["interactions"][1:]:
            for gpu in _gpu_types(interaction):
                if gpu.get("lowestPrice") and gpu["lowestPrice"].get("stockStatus"):
                    gpu["lowestPrice"]["stockStatus"] = "Low"

    clock.advance(minutes=30)
    report = _scrape(engine, settings, clock, RunPod, mutated_cassette(RunPod, low_stock))
    assert report.availability_rows == 0 and history(engine, key, "runpod") == [(True, t0, None)]

    t2 = clock.advance(minutes=30)
    _scrape(engine, settings, clock, RunPod, mutated_cassette(RunPod, sold_out))
    rows = history(engine, key, "runpod")
    assert rows[0] == (True, t0, t2)
    # RunPod's parser drops a size with no stock (the offer is delisted); were it kept, it is unavailable.
    assert rows[1:] in ([], [(False, t2, None)])

    t3 = clock.advance(minutes=30)
    _scrape(engine, settings, clock, RunPod, Cassette.load(bundled_cassette("runpod")))
    assert history(engine, key, "runpod")[-1] == (True, t3, None)
