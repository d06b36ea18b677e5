"""An observation identical to its offer's last one is taken as stored (tracker.ingest.digest): the stored
state after any sequence of batches must be exactly what the full path (every offer validated, converted
and compared) leaves, on both backends; the digest must cover what decides an offer's fate and nothing
that a process picks at random."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields, replace
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import Engine, Table, select, update

import tracker.ingest.validate as validate_module
from providers.contract import PriceKind, Pricing, ScrapedOffer, ScrapeResult, offer_problem
from providers.cost_terms import COST_TERMS
from tests.conftest import _empty
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tests.tracker.ingest.test_set_based import _batches, _run
from tracker.config import Settings
from tracker.ingest.digest import DIGEST_ATTRIBUTES, batch_context, offer_digest
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferAvailability, OfferCostTerms, OfferPrice

CONTEXT = batch_context("vastai", False, Decimal(200))
TERMS = {"disk_usd_per_gb_month": "0.15", "download_mbps": "900"}


def _more() -> list[ScrapeResult]:
    """After `_batches`: what only the digest path tells apart (attributes in and out of the digest, the
    cost terms, a column the diff does not compare)."""
    base = list(_batches()[-1].offers)
    extra = offer("t", "2.50", attributes={"machine_id": 7, COST_TERMS: dict(TERMS), "verification": "verified"})
    return [
        batch(*base, extra),
        batch(*base, replace(extra, attributes=extra.attributes | {"machine_id": 8})),  # lags: outside the digest
        batch(*base, replace(extra, attributes=extra.attributes | {COST_TERMS: TERMS | {"download_mbps": "950"}})),
        batch(*base, replace(extra, instance_type="m-2", attributes=extra.attributes | {COST_TERMS: TERMS})),
        batch(*base, replace(extra, attributes=extra.attributes | {"verification": "unverified"})),
        batch(*base),  # gone
        batch(*base, extra),  # back
    ]


def _sequence(engine: Engine, settings: Settings) -> list[dict[str, object]]:
    clock = FakeClock()
    reports = _run(engine, settings, clock)
    for result in _more():
        clock.advance(hours=1)
        reports.append(do_ingest(engine, settings, clock, result))
    return [r.as_dict() | {"run_id": None} for r in reports]


def _stored(engine: Engine) -> dict[str, list[tuple[object, ...]]]:
    out = {}
    with session_scope(engine) as s:
        for model in (Offer, OfferPrice, OfferAvailability, OfferCostTerms):
            table = model.__table__
            assert isinstance(table, Table)
            out[table.name] = [tuple(r) for r in s.execute(select(table).order_by(table.c.id))]
    return out


def test_taking_unchanged_offers_as_stored_leaves_what_the_full_path_leaves(engine, settings, monkeypatch):
    taken: list[int] = []
    real = validate_module._as_stored

    def counted(*args):
        found = real(*args)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(validate_module, "_as_stored", counted)
    fast_reports = _sequence(engine, settings)
    fast = _stored(engine)
    assert sum(taken) >= 40  # the sequence's unchanged offers were taken as stored
    _empty(engine)
    monkeypatch.setattr(validate_module, "_as_stored", lambda *args: None)
    full_reports = _sequence(engine, settings)
    full = _stored(engine)
    assert fast_reports == full_reports
    for table in fast:
        assert fast[table] == full[table], table
    with session_scope(engine) as s:  # every row keeps the digest it was written from
        assert None not in set(s.scalars(select(Offer.observed_digest)))
    # "t"'s terms: stated, kept while only machine_id and quality moved, changed twice, closed when it went,
    # stated again when it came back.
    with session_scope(engine) as s:
        still_open = [to is None for to in s.scalars(select(OfferCostTerms.valid_to).order_by(OfferCostTerms.id))]
    assert still_open == [False, False, False, True]


def test_an_unchanged_batch_is_not_checked_again(engine, settings, monkeypatch):
    checked: list[str] = []

    def problem(o: ScrapedOffer) -> str | None:
        checked.append(o.key)
        return offer_problem(o)

    monkeypatch.setattr(validate_module, "offer_problem", problem)
    clock = FakeClock()
    offers = batch(*(offer(f"k{i}", f"{2 + i / 100:.2f}", attributes={COST_TERMS: dict(TERMS)}) for i in range(50)))
    do_ingest(engine, settings, clock, offers)
    assert len(checked) == 50
    checked.clear()
    clock.advance(minutes=10)
    report = do_ingest(engine, settings, clock, offers)
    assert checked == [] and (report.offers_valid, report.price_rows, report.status) == (50, 0, "ok")
    clock.advance(minutes=10)
    moved = batch(*offers.offers[:-1], offer("k49", "9.00", attributes={COST_TERMS: dict(TERMS)}))
    report = do_ingest(engine, settings, clock, moved)
    assert checked == ["k49"] and report.price_rows == 1
    with session_scope(engine) as s:
        seen = set(s.scalars(select(Offer.last_seen)))
    assert seen == {clock()}  # taken as stored, still seen now


def test_a_lowered_ceiling_sets_aside_an_offer_stored_under_the_old_one(engine, settings):
    clock = FakeClock()
    offers = batch(offer("a", "2.00"), offer("b", "150.00"))
    do_ingest(engine, settings, clock, offers)
    clock.advance(minutes=10)
    report = do_ingest(engine, settings.model_copy(update={"max_price_per_gpu_hour": Decimal(100)}), clock, offers)
    assert report.offers_valid == 1 and "sanity ceiling" in report.invalid[0]
    assert report.offers_closed == 1


def test_an_offer_whose_card_no_longer_resolves_to_the_stored_one_is_compared_in_full(engine, settings):
    clock = FakeClock()
    offers = batch(offer("a", "2.00"), offer("b", "3.00"))
    do_ingest(engine, settings, clock, offers)
    with session_scope(engine) as s:  # as if the catalog had placed "a" on another card before
        s.execute(update(Offer).where(Offer.offer_key == "a").values(gpu_id="A100-SXM-80GB"))
    clock.advance(minutes=10)
    report = do_ingest(engine, settings, clock, offers)
    assert report.price_rows == 1  # the card changed: a price row, as the diff's rule says
    with session_scope(engine) as s:
        assert s.scalar(select(Offer.gpu_id).where(Offer.offer_key == "a")) == "H100-SXM-80GB"


def test_a_row_without_a_digest_is_compared_in_full_and_gets_one(engine, settings):
    clock = FakeClock()
    offers = batch(offer("a", "2.00"), offer("b", "3.00", pricing=Pricing.spot))
    do_ingest(engine, settings, clock, offers)
    with session_scope(engine) as s:
        written = {k: d for k, d in s.execute(select(Offer.offer_key, Offer.observed_digest))}
        s.execute(update(Offer).values(observed_digest=None))  # rows from before digests were kept
    clock.advance(minutes=10)
    report = do_ingest(engine, settings, clock, offers)
    assert (report.price_rows, report.availability_rows) == (0, 0)
    with session_scope(engine) as s:
        assert {k: d for k, d in s.execute(select(Offer.offer_key, Offer.observed_digest))} == written


def test_the_digest_covers_what_decides_an_offer_and_only_that():
    o = offer("a", "2.00", attributes={"machine_id": 1, "verification": "verified", COST_TERMS: dict(TERMS)})
    same = offer_digest(o, CONTEXT, "")
    assert same == offer_digest(replace(o, attributes=o.attributes | {"machine_id": 2}), CONTEXT, "")
    changed = [
        replace(o, price_per_hour=Decimal("2.01")),
        replace(o, gpu_count=Decimal(2)),
        replace(o, gpu_name="A100"),
        replace(o, region="eu"),
        replace(o, available=False),
        replace(o, pricing=Pricing.spot),
        replace(o, currency="EUR"),
        replace(o, instance_type="m"),
        replace(o, orderable=False),
        replace(o, attributes=o.attributes | {"verification": "unverified"}),
        replace(o, attributes=o.attributes | {COST_TERMS: TERMS | {"download_mbps": "901"}}),
    ]
    changed += [replace(o, attributes=o.attributes | {name: "x"}) for name in DIGEST_ATTRIBUTES]
    digests = {offer_digest(c, CONTEXT, "") for c in changed}
    assert same not in digests and len(digests) == len(changed)
    for context, rate in (
        (batch_context("vastai", True, Decimal(200)), ""),  # a demo batch
        (batch_context("runpod", False, Decimal(200)), ""),
        (batch_context("vastai", False, Decimal(100)), ""),  # another ceiling
        (CONTEXT, "Decimal('1.08')"),  # another rate
    ):
        assert offer_digest(o, context, rate) != same
    assert offer_digest(replace(o, attributes=[]), CONTEXT, "") is None  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", ["0", "12345"])
def test_the_digest_is_the_same_in_every_process(seed):
    code = (
        "from decimal import Decimal; from tests.factories.offers import offer; "
        "from tracker.ingest.digest import batch_context, offer_digest; "
        "o = offer('a', '2.00', attributes={'verification': 'verified', 'cost_terms': {'download_mbps': '900'}}); "
        "print(offer_digest(o, batch_context('vastai', False, Decimal(200)), ''))"
    )
    env = {"PYTHONHASHSEED": seed, "PATH": ""}
    here = offer("a", "2.00", attributes={"verification": "verified", COST_TERMS: {"download_mbps": "900"}})
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == offer_digest(here, CONTEXT, "")


def _other(value: object) -> object:
    if isinstance(value, Pricing | PriceKind):
        return next(m for m in type(value) if m != value)
    if isinstance(value, bool) or value is None:
        return not value
    if isinstance(value, Decimal):
        return value + 1
    assert isinstance(value, str), value
    return value + "x"


def test_every_field_of_a_scraped_offer_is_in_the_digest():
    # A field added to the provider contract later is in the digest unless this test is told otherwise.
    o = offer("a", "2.00", gpu_memory_gb=Decimal(80), vcpus=Decimal(8), ram_gb=Decimal(64), upstream="x")
    base = offer_digest(o, CONTEXT, "")
    for f in fields(ScrapedOffer):
        if f.name != "attributes":  # its members are: test_the_digest_covers_what_decides_an_offer_and_only_that
            changed: ScrapedOffer = replace(o, **{f.name: _other(getattr(o, f.name))})  # type: ignore[arg-type]
            assert offer_digest(changed, CONTEXT, "") != base, f.name
