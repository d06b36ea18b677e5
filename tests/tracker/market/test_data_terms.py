"""Whose prices may be republished (tracker.market.data_terms): the declared terms under TRACKER_REPUBLISH."""

from __future__ import annotations

from datetime import date

import pytest

import tracker.market.data_terms as data_terms
from providers.terms import DataTerms, Permission
from tracker.config import Settings
from tracker.market.data_terms import may_republish, source_terms

READ = date(2026, 12, 2)


def declared(republish: str) -> DataTerms:
    url = "" if republish == "unknown" else "https://example.test/terms"
    return DataTerms("x", url, Permission.unknown, Permission(republish), READ, "X (https://x.test)", "read")


@pytest.fixture
def sources(monkeypatch):
    table = {"open": declared("yes"), "closed": declared("no"), "unread": declared("unknown")}
    monkeypatch.setattr(data_terms, "terms_for", table.get)
    return table


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("cleared", {"open": True, "closed": False, "unread": False, "undeclared": False}),
        ("labelled", {"open": True, "closed": False, "unread": True, "undeclared": True}),
        ("private", {"open": True, "closed": True, "unread": True, "undeclared": True}),
    ],
)
def test_the_setting_decides_unknown_and_forbidden_sources(sources, mode, expected):
    settings = Settings(republish=mode)
    assert {p: may_republish(p, settings) for p in expected} == expected


def test_an_operator_may_clear_a_source_they_hold_permission_for(sources):
    settings = Settings(republish="cleared", republish_cleared="unread, closed")
    assert may_republish("unread", settings) and may_republish("closed", settings)
    assert source_terms("closed", settings)["why"] == "cleared by the operator (TRACKER_REPUBLISH_CLEARED)"


def test_the_row_says_what_was_read_and_what_this_install_does(sources):
    row = source_terms("unread", Settings())
    assert row["republish"] == "unknown" and row["read_on"] == "2026-12-02" and row["republished"] is True
    assert row["why"] == "terms unknown, not cleared: labelled"
    assert source_terms("closed", Settings())["why"] == "its terms forbid republication: left out"


def test_every_registered_source_is_unknown_as_read():
    # As read on 2026-12-02 no stored terms could be read to permit or forbid republication.
    settings = Settings(republish="cleared")
    assert data_terms.republication("vastai") is Permission.unknown
    assert not may_republish("vastai", settings)
