"""`gpu-tracker terms`: each commitment of a card on its own row (never blended), --json for scripts, and
a reserved `history` that needs its --term."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from providers.contract import Pricing
from tests.factories.offers import batch, do_ingest, offer


def _seed(engine, settings, clock):
    offers = batch(
        offer("od", "3.00"),
        offer("d1", "4.00", pricing=Pricing.reserved, reserved_term="1d"),
        offer("y3", "2.00", pricing=Pricing.reserved, reserved_term="3y"),
        offer("y3b", "2.20", pricing=Pricing.reserved, reserved_term="36mo"),
    )
    clock.now = datetime.now(UTC) - timedelta(minutes=5)  # the command reads the real clock: fresh now
    do_ingest(engine, settings, clock, offers, provider="aws")


def test_terms_lists_every_commitment_apart(cli, engine, settings, clock, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    _seed(engine, settings, clock)
    out = cli("terms", "H100-SXM")
    assert out.exit_code == 0, out.output
    rows = {line.split()[0]: line.split()[1:] for line in out.output.splitlines() if line.split()}
    assert rows["on_demand"][0] == "1" and rows["1d"][:2] == ["1", "4.00"] and rows["3y"][:2] == ["2", "2.00"]
    assert rows["3mo"][:2] == ["0", "-"]
    data = json.loads(cli("terms", "H100-SXM", "--json", "--days", "1").output)
    (card,) = data["cards"]
    assert [p["label"] for p in card["terms"]] == ["on_demand", "spot", "1d", "7d", "1mo", "3mo", "1y", "3y"]
    assert {s["label"]: len(s["days"]) for s in card["history"]}["3y"] == 1


def test_a_reserved_history_needs_its_term(cli, engine, settings, clock):
    _seed(engine, settings, clock)
    out = cli("history", "H100-SXM", "--pricing", "reserved")
    assert out.exit_code != 0 and "--term" in out.output and len(out.output.strip().splitlines()) == 1
    out = cli("history", "H100-SXM", "--pricing", "reserved", "--term", "3y", "--json")
    assert out.exit_code == 0, out.output
    assert [r["offers"] for r in json.loads(out.output)] == [2]
