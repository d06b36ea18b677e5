"""The export follows each source's data terms (tracker.market.data_terms): a forbidden source has no row in
any file and is named in `left_out`; an unknown one is exported and labelled; a private install keeps all."""

from __future__ import annotations

import json
from datetime import date

import pytest

import tracker.market.data_terms as data_terms
from providers.terms import DataTerms, Permission
from tests.factories.offers import batch, do_ingest, offer
from tracker.clock import utcnow
from tracker.config import Settings
from tracker.history.export import write_export
from tracker.storage.engine import session_scope


def _declared(republish: Permission) -> DataTerms:
    url = "" if republish is Permission.unknown else "https://example.test/terms"
    return DataTerms("x", url, Permission.unknown, republish, date(2026, 12, 2), "X", "read")


@pytest.fixture
def stored(engine, settings, clock, monkeypatch):
    table = {"vastai": _declared(Permission.no), "lambdalabs": _declared(Permission.unknown)}
    monkeypatch.setattr(data_terms, "terms_for", table.get)
    do_ingest(engine, settings, clock, batch(offer("v", "2.00")), provider="vastai")
    do_ingest(engine, settings, clock, batch(offer("l", "3.00")), provider="lambdalabs")
    return engine


def _export(engine, tmp_path, mode: str) -> tuple[dict, set[str]]:
    out = tmp_path / mode
    with session_scope(engine) as s:
        manifest = write_export(s, out, fmt="jsonl", generated_at=utcnow(), settings=Settings(republish=mode))
    providers = set()
    for f in manifest["files"]:
        for line in (out / f["name"]).read_text().splitlines():
            providers.add(json.loads(line)["provider"])
    return manifest, providers


def test_a_forbidden_source_is_left_out_and_an_unknown_one_labelled(stored, tmp_path):
    manifest, providers = _export(stored, tmp_path, "labelled")
    assert providers == {"lambdalabs"}  # no price, availability, run or offer row of vastai
    assert [s["provider"] for s in manifest["left_out"]] == ["vastai"]
    assert manifest["left_out"][0]["data_terms"]["why"] == "its terms forbid republication: left out"
    (source,) = manifest["sources"]
    assert source["data_terms"]["republish"] == "unknown" and source["data_terms"]["republished"] is True
    assert manifest["for_publication"] is True


def test_cleared_leaves_unknown_out_and_private_keeps_everything(stored, tmp_path):
    manifest, providers = _export(stored, tmp_path, "cleared")
    assert providers == set() and {s["provider"] for s in manifest["left_out"]} == {"vastai", "lambdalabs"}
    manifest, providers = _export(stored, tmp_path, "private")
    assert providers == {"vastai", "lambdalabs"} and manifest["left_out"] == []
    assert manifest["for_publication"] is False
