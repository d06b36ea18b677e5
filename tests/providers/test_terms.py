"""Every registered provider declares its data terms (providers/terms.toml), as explicit, well-formed data."""

from __future__ import annotations

from datetime import date

import pytest

from providers.contract import ProviderError
from providers.registry import all_providers
from providers.terms import Permission, _parse, all_terms, terms_for


def test_every_registered_provider_declares_terms_and_nothing_else_does():
    declared, registered = set(all_terms()), set(all_providers())
    assert registered - declared == set(), "providers without a [name] table in providers/terms.toml"
    assert declared - registered == set(), "terms.toml tables naming no registered provider"


def test_each_declaration_says_what_was_read_and_when():
    for name, terms in all_terms().items():
        assert terms.provider == name
        assert isinstance(terms.read_on, date) and terms.read_on <= date.today()
        assert terms.attribution.strip() and terms.note.strip()
        # A yes or a no is read from a clause: it names the terms it was read in.
        if Permission.unknown not in (terms.store, terms.republish):
            assert terms.url.startswith("https://"), name
        if not terms.url:
            assert terms.republish is Permission.unknown and terms.store is Permission.unknown, name


def test_an_unregistered_name_declares_none():
    assert terms_for("no-such-provider") is None
    assert terms_for("vastai") is not None and terms_for("vastai").url == "https://vast.ai/terms"  # type: ignore[union-attr]


GOOD = {
    "url": "https://example.test/terms",
    "store": "yes",
    "republish": "no",
    "read_on": date(2026, 12, 2),
    "attribution": "Example",
    "note": "§4 read",
}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"republish": "maybe"}, "store and republish are one of"),
        ({"url": "http://example.test"}, "https address or empty"),
        ({"read_on": "2026-12-02"}, "read_on is a date"),
        ({"note": " "}, "non-empty text"),
        ({"url": ""}, "give their url"),  # a yes or no must name the terms it was read in
        ({"extra": 1}, "needs exactly"),
    ],
)
def test_a_malformed_declaration_is_refused(change, problem):
    assert _parse("example", GOOD).republish is Permission.no
    with pytest.raises(ProviderError, match=problem):
        _parse("example", GOOD | change)
