"""Cost-terms history (tracker.ingest.costs) on SQLite and Postgres: change-only rows like prices; a
changed term closes the open row and opens one; delisting closes; the real Vast bundles give terms."""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy import select, update

import tracker.ingest.costs as ingest_costs
from providers.adapters.vastai import parse
from providers.cost_terms import COST_TERMS, terms
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tests.factories.real_payloads import real_payload
from tracker.costs import load_stated
from tracker.ingest.costs import COLUMNS as TERM_COLUMNS
from tracker.ingest.costs import stated_terms, terms_digest
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferCostTerms


def _terms(**values):
    return {COST_TERMS: terms(**values)}


def history(engine, key: str):
    with session_scope(engine) as s:
        oid = s.scalar(select(Offer.id).where(Offer.offer_key == key))
        rows = s.scalars(select(OfferCostTerms).where(OfferCostTerms.offer_id == oid).order_by(OfferCostTerms.id))
        return [(r.egress_usd_per_gb, r.download_mbps, r.valid_from, r.valid_to) for r in rows]


def test_terms_are_kept_change_only(engine, settings):
    clock = FakeClock()
    first = clock()
    a = _terms(egress_usd_per_gb=Decimal("0.004"), download_mbps=Decimal("718.1"))
    do_ingest(engine, settings, clock, batch(offer("a", "2.00", attributes=a), offer("b", "3.00")))
    clock.advance(minutes=10)
    do_ingest(engine, settings, clock, batch(offer("a", "2.00", attributes=a), offer("b", "3.00")))
    assert history(engine, "a") == [(Decimal("0.004000"), Decimal("718.100"), first, None)]
    assert history(engine, "b") == []  # states nothing: no row

    changed = clock.advance(minutes=10)
    a2 = _terms(egress_usd_per_gb=Decimal("0.004"), download_mbps=Decimal("500"))
    do_ingest(engine, settings, clock, batch(offer("a", "2.00", attributes=a2), offer("b", "3.00")))
    assert history(engine, "a") == [
        (Decimal("0.004000"), Decimal("718.100"), first, changed),
        (Decimal("0.004000"), Decimal("500.000"), changed, None),
    ]

    gone = clock.advance(minutes=10)
    do_ingest(engine, settings, clock, batch(offer("b", "3.00")))
    assert history(engine, "a")[-1][3] == gone  # delisted: the open row closes
    with session_scope(engine) as s:
        assert load_stated(s) == {}


def test_a_malformed_term_is_not_said():
    assert stated_terms({COST_TERMS: {"egress_usd_per_gb": "-1", "download_mbps": "fast"}}) is None
    assert stated_terms({COST_TERMS: {"stopped_bills": "yes", "egress_usd_per_gb": "0.01"}}) == {
        "billing_increment_s": None,
        "billing_minimum_s": None,
        "included_disk_gb": None,
        "disk_usd_per_gb_month": None,
        "egress_usd_per_gb": Decimal("0.010000"),
        "ingress_usd_per_gb": None,
        "stopped_bills": None,
        "download_mbps": None,
    }


def test_real_vast_bundles_state_disk_transfer_and_bandwidth():
    result = parse({"offers": real_payload("vastai/vast-cli_11ecdfa_search_trimmed.json")})
    stated = [o.attributes[COST_TERMS] for o in result.offers]  # each offer states them
    assert stated and all(stated)
    first = stated[0]
    # vast-cli's capture, first bundle: storage_cost 0.2 $/GB-month, storage_total_cost 0.00138889 $/h
    # (5 GB in dph_total), inet_down_cost 0.0026 and inet_up_cost 0.0039 $/GB, inet_down 718.1 Mbit/s.
    assert Decimal(first["disk_usd_per_gb_month"]) == Decimal("0.19999999999999998")
    assert Decimal(first["included_disk_gb"]) == Decimal("5.000")
    assert Decimal(first["ingress_usd_per_gb"]) == Decimal("0.0026041666666666665")
    assert Decimal(first["egress_usd_per_gb"]) == Decimal("0.00390625")
    assert Decimal(first["download_mbps"]) == Decimal("718.1")
    # Hosts price transfer very differently: the reason it belongs in the cost of a run.
    egress = sorted(Decimal(s["egress_usd_per_gb"]) for s in stated if "egress_usd_per_gb" in s)
    assert egress[-1] > 10 * egress[len(egress) // 2] > 0


def test_the_digest_compares_terms_by_value_and_keeps_types_apart():
    # An unchanged scrape compares digests, so the same figure written two ways must match, and the
    # per-combination cache must never hand a boolean's answer to a number (True == 1 in Python).
    tenth = terms_digest({"egress_usd_per_gb": Decimal("0.1")})
    assert tenth == terms_digest({"egress_usd_per_gb": Decimal("0.100000")})
    assert tenth != terms_digest({"egress_usd_per_gb": Decimal("0.2")})
    assert stated_terms({COST_TERMS: {"stopped_bills": True, "billing_minimum_s": 1}}) == {
        **{name: None for name in TERM_COLUMNS},
        "stopped_bills": True,
        "billing_minimum_s": Decimal("1.000"),
    }
    assert stated_terms({COST_TERMS: {"stopped_bills": 1, "billing_minimum_s": True}}) is None
    assert stated_terms({COST_TERMS: {"egress_usd_per_gb": [1], "billing_minimum_s": 60}}) == {
        **{name: None for name in TERM_COLUMNS},
        "billing_minimum_s": Decimal("60.000"),
    }


def _memo_values(**raw):
    return ingest_costs._values({COST_TERMS: raw})


def test_the_batch_memo_keeps_types_apart_and_digests_like_the_rule():
    memo = ingest_costs._BatchMemo({})
    as_bool = _memo_values(stopped_bills=True, billing_minimum_s=1)
    as_int = _memo_values(stopped_bills=1, billing_minimum_s=True)
    said = stated_terms({COST_TERMS: {"stopped_bills": True, "billing_minimum_s": 1}})
    assert said is not None and as_bool is not None and as_int is not None
    assert memo.digest(as_bool) == terms_digest(said)
    assert memo.digest(as_int) is None  # True == 1, yet the boolean's answer is not handed to the number
    assert memo.digest(_memo_values(egress_usd_per_gb=[1], billing_minimum_s=60)) == terms_digest(
        {"billing_minimum_s": Decimal("60.000")}
    )  # an unhashable value is not memoised and still gives the rule's answer
    assert dict(memo.normalised(as_bool) or ()) == said


def _many_terms(n: int, start: int = 0):
    # More distinct per-host combinations than the old global caches held (16,384): Vast states ~129,000.
    return [
        offer(
            f"h{i}",
            f"{2 + i / 1000:.3f}",
            attributes=_terms(download_mbps=Decimal(100 + i), egress_usd_per_gb=Decimal("0.004")),
        )
        for i in range(start, start + n)
    ]


def test_a_repeated_batch_normalises_nothing_again_and_the_memo_never_outgrows_a_batch(engine, settings, monkeypatch):
    ingest_costs._CARRIED.pop("vastai", None)
    calls: list[int] = []
    real = ingest_costs._normalised

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(ingest_costs, "_normalised", counted)
    clock = FakeClock()
    n = 17_000
    offers = _many_terms(n)
    do_ingest(engine, settings, clock, batch(*offers))
    assert len(calls) == n  # each distinct combination once
    calls.clear()
    clock.advance(minutes=10)
    with session_scope(engine) as s:  # no stored digests (rows from before them): every offer compared in full
        s.execute(update(Offer).values(observed_digest=None))
    do_ingest(engine, settings, clock, batch(*offers))
    assert calls == []  # an unchanged scrape of more combinations than an LRU held: every one a hit
    assert len(ingest_costs._CARRIED["vastai"]) == n

    clock.advance(minutes=10)
    do_ingest(engine, settings, clock, batch(*offers))
    assert calls == []  # now taken as stored (tracker.ingest.digest): nothing is digested at all
    assert ingest_costs._CARRIED["vastai"] == {}  # and nothing carried: only what a batch compared is

    clock.advance(minutes=10)
    moved = _many_terms(10, start=n - 5)  # 5 offers as they were, 5 new with new combinations
    do_ingest(engine, settings, clock, batch(*offers[:-5], *moved))
    assert len(calls) == 5
    assert len(ingest_costs._CARRIED["vastai"]) == 5  # exactly the combinations this batch compared
    assert history(engine, f"h{n + 4}")[0][1] == Decimal(100 + n + 4).quantize(Decimal("0.001"))
    (kept,) = history(engine, f"h{n - 1}")  # taken as stored: its first row stays open
    assert kept[1:] == (Decimal(100 + n - 1).quantize(Decimal("0.001")), kept[2], None)


def test_a_batch_digests_exactly_as_the_rule_does():
    """The batch memo builds each `name=value` piece of a digest's text once; the digests are those of
    `terms_digest` on the normalised terms, for figures written several ways, booleans and missing values."""
    memo = ingest_costs._BatchMemo({})
    combos = [
        {"egress_usd_per_gb": "0.1", "billing_minimum_s": 60},
        {"egress_usd_per_gb": "0.100000", "billing_minimum_s": 60.0},
        {"egress_usd_per_gb": Decimal("0.10"), "stopped_bills": True, "download_mbps": 0},
        {"ingress_usd_per_gb": 2, "stopped_bills": False, "billing_minimum_s": "60.0004"},
        {"ingress_usd_per_gb": True, "download_mbps": "1000"},
    ]
    for raw in combos:
        values = _memo_values(**raw)
        plain = stated_terms({COST_TERMS: raw})
        assert memo.digest(values) == (None if plain is None else terms_digest(plain))
