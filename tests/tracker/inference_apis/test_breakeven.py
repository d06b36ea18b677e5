"""Renting against paying per token (tracker.inference_apis.breakeven): the arithmetic, by hand."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tracker.inference_apis.breakeven import api_usd_per_mtok_output, break_even

MONTH_S = 730 * 3600.0


def test_the_prompt_rides_on_each_output_token():
    # 1000 in / 200 out: 5 input tokens per output token at $0.13, plus $0.40 for the output itself.
    assert api_usd_per_mtok_output(Decimal("0.13"), Decimal("0.40"), 1000, 200) == Decimal("1.050000")
    assert api_usd_per_mtok_output(Decimal("0.2"), Decimal("0.2"), 0, 100) == Decimal("0.200000")


def test_break_even_is_the_monthly_bill_over_the_api_price():
    # $2/h for 730 h = $1460 a month; 3000 tok/s = 7.884e9 tokens a month at full load.
    be = break_even(Decimal("1460"), 3000.0, Decimal("1.00"), MONTH_S)
    assert be.capacity_tokens_per_month == pytest.approx(7.884e9)
    assert be.self_host_usd_per_mtok == Decimal("0.185185")  # 1460 / 7884
    assert be.tokens_per_month == pytest.approx(1.46e9)  # $1460 buys 1.46e9 tokens at $1/Mtok
    assert be.utilisation == pytest.approx(1.46e9 / 7.884e9)
    # At the break-even volume the two bills are equal.
    assert Decimal(repr(be.tokens_per_month)) / Decimal(10**6) * be.api_usd_per_mtok == pytest.approx(Decimal(1460))


def test_an_api_cheaper_than_the_machine_at_full_load_always_wins():
    be = break_even(Decimal("1460"), 3000.0, Decimal("0.10"), MONTH_S)  # machine: $0.185/Mtok at best
    assert be.tokens_per_month is None and be.utilisation is None
    assert be.self_host_usd_per_mtok > be.api_usd_per_mtok


def test_exactly_at_capacity_is_still_a_break_even():
    be = break_even(Decimal("1000"), 1e6 / MONTH_S, Decimal("1000"), MONTH_S)  # 1M tokens/month, $1000/Mtok
    assert be.tokens_per_month == pytest.approx(1e6) and be.utilisation == pytest.approx(1.0)


def test_a_free_api_always_wins():
    assert break_even(Decimal("1"), 100.0, Decimal("0"), MONTH_S).tokens_per_month is None


@pytest.mark.parametrize(
    ("machine", "tps", "api"),
    [
        (Decimal("-1"), 10.0, Decimal("1")),
        (Decimal("1"), 0.0, Decimal("1")),
        (Decimal("1"), float("nan"), Decimal("1")),
        (Decimal("1"), 10.0, Decimal("-0.5")),
    ],
)
def test_bad_figures_are_refused(machine, tps, api):
    with pytest.raises(ValueError):
        break_even(machine, tps, api, MONTH_S)


def test_bad_token_shapes_are_refused():
    with pytest.raises(ValueError):
        api_usd_per_mtok_output(Decimal(1), Decimal(1), 10, 0)
