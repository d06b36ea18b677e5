"""Rankings people can act on: one row per listing at its cheapest region (the rest counted), and offers
the provider says are sold out ranked after every other, saying so."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.clock import utcnow
from tracker.estimate import JobInput, prepare
from tracker.market.live import LIVE
from tracker.market.rank import RankFilters, RankOptions
from tracker.market.service import rank_offers
from tracker.storage.engine import session_scope

JOB = JobInput(model="llama-3.1-8b", method="qlora", tokens="22.5M")


@pytest.fixture
def market(engine, settings):
    """One A100 type in three regions (the same price in two), a second type, and a cheaper sold-out one."""
    LIVE.clear()
    clock = FakeClock(utcnow())
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("a100-fin-01", "1.20", gpu="A100 SXM4 80GB", region="fin-01", instance_type="1A100.80S"),
            offer("a100-fin-02", "1.20", gpu="A100 SXM4 80GB", region="fin-02", instance_type="1A100.80S"),
            offer("a100-ice-01", "1.35", gpu="A100 SXM4 80GB", region="ice-01", instance_type="1A100.80S"),
            offer("h100-fin-01", "2.10", gpu="H100 SXM5 80GB", region="fin-01", instance_type="1H100.80S"),
            offer(
                "sold-out",
                "0.90",
                gpu="A100 SXM4 80GB",
                region="fin-03",
                instance_type="1A100.80S.cheap",
                available=False,
            ),
        ),
        provider="verda",
    )
    yield clock()
    LIVE.clear()


def _rank(engine, settings, now, **options):
    with session_scope(engine) as s:
        return rank_offers(
            engine, s, settings, now, prepare(JOB.spec(), None), RankFilters(), RankOptions(gpu_only=True, **options)
        )["rows"]


def test_one_row_per_listing_at_its_cheapest_region(engine, settings, market):
    rows = _rank(engine, settings, market, one_per_listing=True)
    a100 = [r for r in rows if r["instance_type"] == "1A100.80S"]
    assert len(a100) == 1, rows
    (row,) = a100
    assert row["region"] in ("fin-01", "fin-02") and row["price_per_hour"] == Decimal("1.20")
    assert row["listings"] == 3
    assert set(row["other_regions"]) == {"fin-01", "fin-02", "ice-01"} - {row["region"]}
    assert len(rows) == 3  # the A100 listing, the H100 listing, the sold-out listing


def test_all_regions_lists_every_offer(engine, settings, market):
    rows = _rank(engine, settings, market)
    assert len(rows) == 5
    assert all("listings" not in r for r in rows)


@pytest.mark.parametrize("one_per_listing", [False, True])
def test_a_sold_out_offer_ranks_after_available_ones_and_says_so(engine, settings, market, one_per_listing):
    rows = _rank(engine, settings, market, one_per_listing=one_per_listing)
    assert rows[-1]["offer_key"] == "sold-out"  # the cheapest by price, yet last
    assert rows[-1]["unavailable"] is True and rows[-1]["available"] is False
    assert not any(r["unavailable"] for r in rows[:-1])


def test_a_small_limit_still_skips_a_sold_out_cheaper_offer(engine, settings, market):
    (row,) = _rank(engine, settings, market, limit=1)
    assert row["offer_key"] != "sold-out" and not row["unavailable"]


def test_cheapest_cli_folds_regions_and_expands_on_request(cli, engine, settings, market, monkeypatch):
    import json

    monkeypatch.setenv("COLUMNS", "120")
    job = ("--model", "llama-3.1-8b", "--method", "qlora", "--tokens", "22.5M", "--gpu-only")
    # --json is every offer, as the API and MCP answer it; the table folds each listing's regions.
    assert len(json.loads(cli("cheapest", *job, "--json").stdout)) == 5
    table_rows = lambda out: [ln for ln in out.splitlines() if ln[:2].strip().isdigit()]  # noqa: E731
    assert len(table_rows(cli("cheapest", *job).output)) == 3
    assert len(table_rows(cli("cheapest", *job, "--all-regions").output)) == 5
    text = cli("cheapest", *job)
    assert text.exit_code == 0, text.output
    out = " ".join(text.output.split())
    assert "fin-01 +2" in out and "(sold out)" in out and "--all-regions lists each" in out


def _listing_key(row: dict[str, object]) -> tuple[object, ...]:
    """The rule, spelled out per offer: provider, pricing, term, and the machine (a resale: upstream, card
    and count; else the instance type; else the offer alone)."""
    upstream, kind = row["upstream"], row["instance_type"]
    if isinstance(upstream, str) and upstream:
        machine: tuple[object, ...] = ("resale", upstream, row["gpu_id"], row["gpu_count_f"])
    elif isinstance(kind, str) and kind:
        machine = ("type", kind)
    else:
        machine = ("offer", row["id"])
    return (row["provider"], row["pricing"], row["reserved_term"], *machine)


def test_listing_codes_group_offers_exactly_as_the_rule_says():
    # Vectorised over the table (issue #29: a string per offer cost 0.6 s per ranking at 200,000 offers);
    # every part of the rule varies here, with missing and empty values and counts past any small radix.
    import numpy as np

    from tracker.market.rank import LISTING_COLUMN, listing_codes
    from tracker.market.table import OfferTable

    rng = np.random.default_rng(7)
    n = 5_000

    def pick(values: list[object]) -> np.ndarray:
        out = np.empty(n, dtype=object)
        out[:] = [values[i] for i in rng.integers(0, len(values), n)]
        return out

    columns = {
        "id": (np.arange(n, dtype=np.int64) * 7_919 + 3_000_000_000)[rng.permutation(n)],  # past 32 bits
        "provider": pick(["vastai", "runpod", "shadeform", "lambda"]),
        "pricing": pick(["on_demand", "spot", "reserved"]),
        "reserved_term": pick([None, "1y", "3mo", ""]),
        "instance_type": pick([None, "", *(f"type-{i}" for i in range(300))]),
        "upstream": pick([None, "", "lambda", "hyperstack", "crusoe"]),
        "gpu_id": pick(["H100-SXM-80GB", "A100-SXM-80GB", "L40S-48GB"]),
        "gpu_count_f": np.array(rng.choice([0.5, 1.0, 2.0, 8.0], n), dtype=np.float64),
    }
    table = OfferTable(columns, ["vastai", "runpod", "shadeform", "lambda"])
    idx = rng.permutation(n)[: n // 2]
    codes = listing_codes(table, idx)
    rows = [{k: v[i] for k, v in columns.items()} for i in idx.tolist()]
    keys = [_listing_key(row) for row in rows]
    by_key: dict[tuple[object, ...], set[int]] = {}
    by_code: dict[int, set[tuple[object, ...]]] = {}
    for key, code in zip(keys, codes.tolist(), strict=True):
        by_key.setdefault(key, set()).add(code)
        by_code.setdefault(code, set()).add(key)
    assert all(len(c) == 1 for c in by_key.values())  # one listing, one code
    assert all(len(k) == 1 for k in by_code.values())  # one code, one listing
    assert len(by_key) > 1_000  # the case is not trivially one listing per provider
    assert LISTING_COLUMN in table  # kept with the table: a second ranking gathers it
    assert listing_codes(table, idx).tolist() == codes.tolist()


def test_the_api_builds_what_rankings_gather_with_its_table(engine, settings, clock):
    from api.app import create_app
    from tracker.market.live import LiveOffers
    from tracker.market.rank import LISTING_COLUMN, warm_ranking

    assert warm_ranking in create_app(settings, engine).state.live.warmers
    do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "2.10", available=False)))
    table = LiveOffers(warmers=[warm_ranking])
    with session_scope(engine) as session:
        _, frame = table.frame(engine, session)
    assert LISTING_COLUMN in frame
    assert {"rank:combos", "rank:sold-out", "codes:provider", "codes:pricing"} <= set(frame._derived)
