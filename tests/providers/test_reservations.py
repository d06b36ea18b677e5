"""Reservation terms and zero prices, across every provider's bundled cassette (or rate sheet) and every
real payload: no offer anywhere has a price of 0, a reserved price always carries its term in the one
spelling (`providers.parsing.reservation_term`), and nothing with a term is shown as on-demand or spot."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.contract import Pricing, ProviderError
from providers.parsing import reservation_term, term_hours
from providers.registry import PROVIDERS
from tests.factories.cassettes import replay
from tests.factories.real_results import REAL_RESULTS


def _sources() -> list[pytest.ParameterSet]:
    cases = [pytest.param(p, id=f"{p.name}-cassette") for p in PROVIDERS]
    return cases + [pytest.param(name, id=f"{name}-real") for name in sorted(REAL_RESULTS)]


@pytest.mark.parametrize("source", _sources())
def test_no_zero_price_and_no_reservation_shown_as_on_demand(source):
    result = REAL_RESULTS[source]() if isinstance(source, str) else replay(source)
    for o in result.offers:
        assert o.price_per_hour > 0 and o.price_per_gpu_hour > 0, f"{o.key}: price {o.price_per_hour}"
        if o.pricing is Pricing.reserved:
            assert o.reserved_term, f"{o.key}: reserved without its term"
            assert reservation_term(o.reserved_term) == o.reserved_term, f"{o.key}: term {o.reserved_term!r}"
        else:
            assert o.reserved_term is None, f"{o.key}: a {o.reserved_term} commitment shown as {o.pricing.value}"


@pytest.mark.parametrize(
    ("written", "term", "hours"),
    [
        ("1mo", "1mo", 730),
        ("3 months", "3mo", 2190),
        ("6mo", "6mo", 4380),
        ("12-month", "1y", 8760),
        ("1yr", "1y", 8760),
        ("1 year", "1y", 8760),
        ("36mo", "3y", 26280),
        ("3y", "3y", 26280),
        ("7d", "7d", 168),
        ("7 days", "7d", 168),
        ("2w", "14d", 336),
        ("P1Y", "1y", 8760),
        ("1_year", "1y", 8760),
    ],
)
def test_terms_have_one_spelling_and_a_length(written, term, hours):
    assert reservation_term(written) == term
    assert term_hours(term) == Decimal(hours)


@pytest.mark.parametrize("bad", ["", "0mo", "1.5y", "monthly", "1h", "-1y", None, 3])
def test_an_unreadable_term_is_an_error_not_a_guess(bad):
    with pytest.raises(ProviderError, match="reservation term"):
        reservation_term(bad, "row 7")


def test_a_block_price_becomes_dollars_per_gpu_hour():
    # A capacity block: 8 GPUs for 7 days at $2,822.40 → $2.10 per GPU-hour, the term kept beside it.
    term = reservation_term("7 days")
    assert Decimal("2822.40") / (8 * term_hours(term)) == Decimal("2.1")
