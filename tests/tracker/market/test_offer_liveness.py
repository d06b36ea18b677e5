"""The offer list says which offers are live, by the freshness rule the market and rankings count by
(tracker.market.freshness), and filters on it: the SQL of `/v1/offers` and `gpu-tracker offers` agrees
with the live table's `fresh_mask` on the same instant."""

from __future__ import annotations

from fastapi.testclient import TestClient

from api.app import create_app
from tests.factories.offers import batch, do_ingest, offer
from tracker.market.live import fresh_mask, live_table
from tracker.market.offers import OfferFilters, current_offers, listed_rows
from tracker.storage.engine import session_scope


def _two_providers(engine, settings, clock):
    """Vast.ai lists at the start; Lambda five hours later. Seven hours in, only Lambda's is live (both
    windows are the six-hour floor)."""
    do_ingest(engine, settings, clock, batch(offer("v", "2.00")), provider="vastai")
    clock.advance(hours=5)
    do_ingest(engine, settings, clock, batch(offer("l", "3.00")), provider="lambdalabs")
    return clock.advance(hours=2)


def test_rows_say_live_as_the_market_does(engine, settings, clock):
    now = _two_providers(engine, settings, clock)
    with session_scope(engine) as s:
        rows = listed_rows(current_offers(s, OfferFilters(), now=now, settings=settings), now, settings)
        _, table = live_table(None).frame(engine, s)
    assert {r["provider"]: r["live"] for r in rows} == {"vastai": False, "lambdalabs": True}
    fresh = fresh_mask(table, now, settings)  # what the market and rankings count
    assert dict(zip(table["provider"].tolist(), fresh.tolist(), strict=True)) == {"vastai": False, "lambdalabs": True}


def test_live_filter_in_sql(engine, settings, clock):
    now = _two_providers(engine, settings, clock)
    with session_scope(engine) as s:
        live = current_offers(s, OfferFilters(live=True), now=now, settings=settings)
        stale = current_offers(s, OfferFilters(live=False), now=now, settings=settings)
    assert [o.provider for o in live] == ["lambdalabs"]
    assert [o.provider for o in stale] == ["vastai"]


def test_api_flag_and_filter(engine, settings, clock):
    _two_providers(engine, settings, clock)
    with TestClient(create_app(settings, engine, clock=clock), raise_server_exceptions=False) as c:
        every = c.get("/v1/offers").json()["offers"]
        assert {o["provider"]: o["live"] for o in every} == {"vastai": False, "lambdalabs": True}
        assert [o["provider"] for o in c.get("/v1/offers", params={"live": "false"}).json()["offers"]] == ["vastai"]
        assert [o["provider"] for o in c.get("/v1/offers", params={"live": "true"}).json()["offers"]] == ["lambdalabs"]
        bad = c.get("/v1/offers", params={"live": "maybe"})
        assert bad.status_code == 422 and "live" in bad.text
        # A ranking counts live offers only: asking it for stale ones is a 422, not an empty answer.
        ranked = c.post("/v1/rank", json={"model": "llama-3.1-8b", "method": "qlora", "live": False})
        assert ranked.status_code == 422 and "live" in ranked.text
        # Five hours on, with no ingest between, Lambda's offer has gone stale too: the page memoised at the
        # earlier minute is not served (the answer is keyed by the minute, as the market's is).
        clock.advance(hours=5)
        assert {o["live"] for o in c.get("/v1/offers").json()["offers"]} == {False}


def test_cli_marks_stale_and_filters(engine, settings, clock, cli, monkeypatch):
    now = _two_providers(engine, settings, clock)
    monkeypatch.setattr("tracker.cli.offers.utcnow", lambda: now)
    monkeypatch.setenv("COLUMNS", "80")
    shown = cli("offers")
    assert shown.exit_code == 0, shown.output
    (vast,) = [line for line in shown.output.splitlines() if "vastai" in line]
    (lam,) = [line for line in shown.output.splitlines() if "lambdalabs" in line]
    assert "(stale)" in vast and "(stale)" not in lam
    assert max(len(line) for line in shown.output.splitlines()) <= 80
    stale = cli("offers", "--stale", "--json")
    assert stale.exit_code == 0, stale.output
    assert '"provider": "vastai"' in stale.output and "lambdalabs" not in stale.output
    assert '"live": false' in stale.output
    live = cli("offers", "--live", "--json")
    assert "vastai" not in live.output and '"live": true' in live.output
