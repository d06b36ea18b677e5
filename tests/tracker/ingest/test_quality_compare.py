"""Unchanged quality attributes of any JSON type (a provider sending a bool, an integer score) compare
equal on both backends: a second identical batch rewrites no offer row."""

from __future__ import annotations

import pytest

import tracker.ingest.batch as batch_module
from tests.factories.offers import batch, do_ingest, offer
from tracker.ingest.diff import diff


@pytest.mark.parametrize(
    "attributes",
    [
        {"verification": True, "hosting": False, "cloud": "secure"},
        {"verification": "verified", "reliability": 1, "hosting": "datacenter"},
        {"reliability": 0.987654321, "via": None, "upstream": "lambdalabs"},
        {"verification": {"level": 2}, "cloud": ["secure"]},  # odd, but still the same value each run
        {"reliability": 0.1 + 0.2, "hosting": 1e16},  # 17 significant digits: SQLite's JSON keeps 15
    ],
)
def test_an_unchanged_batch_rewrites_no_offer(engine, settings, clock, monkeypatch, attributes):
    seen = []
    real = diff  # what batch_module.diff is until the spy replaces it

    def spy(*args, **kwargs):
        changes = real(*args, **kwargs)
        seen.append(changes)
        return changes

    monkeypatch.setattr(batch_module, "diff", spy)
    result = batch(offer("a", "2.00", attributes=dict(attributes)), offer("b", "3.00", attributes=dict(attributes)))
    do_ingest(engine, settings, clock, result)
    clock.advance(minutes=10)
    report = do_ingest(engine, settings, clock, result)
    assert report.status == "ok" and report.price_rows == 0
    assert seen[-1].rewritten == []
