"""Term columns: `terms_at` gives one offer's exact terms, by the rule the columns were built with."""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from tracker.costs import frame, resolve
from tracker.costs.frame import term_columns


def _columns():
    ids = np.arange(1, 5, dtype=np.int64)
    providers = np.array(["vastai", "runpod", "lambda", "vastai"], dtype=object)
    pricing = np.array(["spot", "on_demand", "on_demand", None], dtype=object)
    reliability = np.array([0.98, np.nan, np.nan, 0.9])
    stated = {1: {"download_mbps": Decimal("812.5"), "egress_usd_per_gb": Decimal("0.02")}}
    return term_columns(ids, providers, pricing, reliability, stated)


def test_terms_at_is_the_rule_for_every_row():
    cols = _columns()
    expected = [
        resolve(
            "vastai",
            "spot",
            {"download_mbps": Decimal("812.5"), "egress_usd_per_gb": Decimal("0.02")},
            reliability=0.98,
        ),
        resolve("runpod", "on_demand", {}),
        resolve("lambda", "on_demand", {}),
        resolve("vastai", None, {}, reliability=0.9),
    ]
    for i, want in enumerate(expected):
        got = cols.terms_at(i)
        assert dict(got.values) == dict(want.values) and dict(got.sources) == dict(want.sources), i


def test_terms_at_resolves_a_row_once_and_stays_bounded(monkeypatch):
    cols = _columns()
    calls: list[str] = []
    real = resolve

    def counting(provider, *args, **kwargs):
        calls.append(provider)
        return real(provider, *args, **kwargs)

    monkeypatch.setattr(frame, "resolve", counting)
    first = cols.terms_at(0)
    assert cols.terms_at(0) is first and calls == ["vastai"]  # the second answer is the kept one
    monkeypatch.setattr(frame, "_RESOLVED_MAX", 2)
    cols.terms_at(1)
    cols.terms_at(2)  # past the bound: the kept rows are dropped, never more than the bound kept
    assert len(cols._resolved) <= 2
    again = cols.terms_at(0)
    assert again is not first and dict(again.values) == dict(first.values)
