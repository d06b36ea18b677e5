"""One offer the database could not hold (a text longer than its column, a huge or negative number) is set
aside with its reason; the rest of the batch is stored, the same on SQLite and Postgres."""

from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy import select

from tests.factories.offers import batch, do_ingest, offer
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer

HOSTILE = [
    (offer("k" * 256, "2.00"), "key is 256 characters"),
    (offer("long-gpu", "2.00", gpu="H100 " + "x" * 300), "gpu_name is 305 characters"),
    (offer("long-region", "2.00", region="us-" + "r" * 200), "region is 203 characters"),
    (offer("long-type", "2.00", instance_type="t" * 129), "instance_type is 129 characters"),
    (offer("huge-price", "1e30"), "price_per_hour 1e+30 is out of range"),
    (offer("nan-price", "NaN"), "price_per_hour Decimal('NaN') is not a finite number"),
    (offer("huge-count", "2.00", count=10**6), "gpu_count 1e+06 is out of range"),
    (offer("neg-vcpus", "2.00", vcpus=Decimal(-4)), "vcpus -4 is negative"),
    (offer("neg-ram", "2.00", ram_gb=Decimal("-1")), "ram_gb -1 is negative"),
    (offer("neg-mem", "2.00", gpu_memory_gb=Decimal("-80")), "gpu_memory_gb -80 is negative"),
]


@pytest.mark.parametrize(("bad", "reason"), HOSTILE, ids=[o.key[:12] for o, _ in HOSTILE])
def test_one_unstorable_offer_is_set_aside_and_the_rest_stored(engine, settings, clock, bad, reason):
    report = do_ingest(engine, settings, clock, batch(offer("good", "2.50", region="us-east"), bad))
    assert report.status == "ok", report.error
    assert any(reason in line for line in report.invalid), report.invalid
    with session_scope(engine) as session:
        keys = session.scalars(select(Offer.offer_key).where(Offer.provider == "vastai")).all()
    assert keys == ["good"]


def test_the_longest_storable_values_are_stored(engine, settings, clock):
    edge = offer("k" * 255, "2.00", region="r" * 128, instance_type="t" * 128, vcpus=Decimal("999999.99"))
    report = do_ingest(engine, settings, clock, batch(edge))
    assert report.status == "ok" and not report.invalid, report.invalid
