"""Quarantine against the last good run (issue #18 item 4), on SQLite and Postgres.

Broken batches — a whole batch scaled ×10/×100/×0.01, an empty or halved batch on a small provider —
are quarantined and change nothing; genuine moves (the market moving 25 %, a few offers tripling) and
tiny providers losing an offer are applied as usual.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from providers.contract import Pricing, ScrapedOffer
from tests.factories.offers import batch, do_ingest, offer
from tracker.pipeline.scraping import plan, run_scrape
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferPrice, ScrapeRun

# Vast-like: 8 GPU models × on-demand/spot = 16 cards. Per-GPU prices stay under $1.95 so that ×100
# stays under the $200/GPU-hour ceiling, as Vast's ×100 did: only the level check can catch it.
VAST_MODELS = [
    ("H100-SXM-80GB", 1.60),
    ("A100-SXM4-80GB", 1.10),
    ("L40S", 0.80),
    ("RTX A6000", 0.45),
    ("RTX 4090", 0.35),
    ("L4", 0.30),
    ("A10", 0.25),
    ("RTX 3090", 0.20),
]

# Lambda-like: 16 on-demand offers over 9 cards at list prices (so ×100 pushes the dearer ones over the
# ceiling and the rest through, as a real scaling bug would).
LAMBDA = [
    ("gpu_1x_h100_sxm5", "H100 SXM", 1, "2.99"),
    ("gpu_8x_h100_sxm5", "H100 SXM", 8, "23.92"),
    ("gpu_2x_h100_sxm5", "H100 SXM", 2, "5.98"),
    ("gpu_1x_h100_pcie", "H100 PCIe", 1, "2.49"),
    ("gpu_1x_a100_sxm4", "A100 SXM4 40GB", 1, "1.29"),
    ("gpu_8x_a100_sxm4", "A100 SXM4 40GB", 8, "10.32"),
    ("gpu_8x_a100_80gb_sxm4", "A100-SXM4-80GB", 8, "14.32"),
    ("gpu_1x_a100", "A100 PCIe 40GB", 1, "1.29"),
    ("gpu_2x_a100", "A100 PCIe 40GB", 2, "2.58"),
    ("gpu_4x_a100", "A100 PCIe 40GB", 4, "5.16"),
    ("gpu_1x_a10", "A10", 1, "0.75"),
    ("gpu_1x_a6000", "RTX A6000", 1, "0.80"),
    ("gpu_2x_a6000", "RTX A6000", 2, "1.60"),
    ("gpu_4x_a6000", "RTX A6000", 4, "3.20"),
    ("gpu_8x_b200_sxm6", "B200", 8, "39.92"),
    ("gpu_8x_v100", "V100-SXM2-16GB", 8, "4.40"),
]


def vast_offers(n: int = 320, seed: int = 18) -> list[ScrapedOffer]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        gpu, base = VAST_MODELS[i % len(VAST_MODELS)]
        count = (1, 2, 4, 8)[(i // len(VAST_MODELS)) % 4]
        per_gpu = base * rng.uniform(0.8, 1.2)
        spot = (i // 32) % 2 == 1  # alternate blocks of bids, so every model has both pricing types
        if spot:
            per_gpu *= 0.6
        price = Decimal(f"{per_gpu * count:.4f}")
        key = f"{31_000_000 + i}{':bid' if spot else ''}"
        out.append(offer(key, str(price), gpu=gpu, count=count, pricing=Pricing.spot if spot else Pricing.on_demand))
    return out


def lambda_offers() -> list[ScrapedOffer]:
    return [offer(key, price, gpu=gpu, count=count) for key, gpu, count, price in LAMBDA]


def scaled(offers: list[ScrapedOffer], factor: str, keys: set[str] | None = None) -> list[ScrapedOffer]:
    """The same offers with prices × factor (only those in `keys` when given)."""
    f = Decimal(factor)
    return [
        replace(o, price_per_hour=o.price_per_hour * f) if keys is None or o.key in keys else replace(o) for o in offers
    ]


def state(engine, provider: str) -> tuple[int, int, dict[str, Decimal]]:
    """(price rows, listed offers, live price by key) for one provider."""
    with session_scope(engine) as s:
        rows = s.execute(
            select(func.count()).select_from(OfferPrice).join(Offer).where(Offer.provider == provider)
        ).scalar_one()
        listed = dict(
            s.execute(
                select(Offer.offer_key, Offer.price_per_hour).where(
                    Offer.provider == provider, Offer.delisted_at.is_(None)
                )
            ).all()
        )
        return rows, len(listed), listed


def last_run(engine, provider: str) -> ScrapeRun:
    with session_scope(engine) as s:
        run = s.scalar(select(ScrapeRun).where(ScrapeRun.provider == provider).order_by(ScrapeRun.id.desc()))
        assert run is not None, f"no run of {provider}"
        s.expunge(run)
        return run


def good_run(engine, settings, clock, offers: list[ScrapedOffer], provider: str):
    report = do_ingest(engine, settings, clock, batch(*offers), provider=provider)
    assert report.status == "ok", report.error
    clock.advance(minutes=10)
    return state(engine, provider)


CASES = {"vastai": vast_offers, "lambdalabs": lambda_offers}


@pytest.mark.parametrize("provider", sorted(CASES))
@pytest.mark.parametrize("factor", ["10", "100", "0.01"])
def test_whole_batch_scaling_is_quarantined_and_changes_nothing(engine, settings, clock, provider, factor):
    offers = CASES[provider]()
    before = good_run(engine, settings, clock, offers, provider)

    report = do_ingest(engine, settings, clock, batch(*scaled(offers, factor)), provider=provider)

    assert report.status == "quarantined", report.as_dict()
    assert report.price_rows == report.offers_closed == 0
    assert state(engine, provider) == before  # nothing rewritten, nothing delisted
    run = last_run(engine, provider)
    assert run.status == "quarantined" and run.error == report.error and (run.error or "").endswith("prices kept")
    shown = {"10": "10.0", "100": "100.0", "0.01": "0.01"}[factor]
    # Lambda ×100 puts its dearer cards over the ceiling (set aside); the 6 cards left still read ×100.
    cards = 16 if provider == "vastai" else 6 if factor == "100" else 9
    assert report.error == (
        f"price level ×{shown} against the last good run on {cards} of {cards} cards (median ratio per card); "
        "prices kept"
    )


def test_lambda_thousandfold_is_an_empty_batch(engine, settings, clock):
    """×1000 puts every offer over the ceiling: 16 → 0 valid used to run ok and delist all 16."""
    before = good_run(engine, settings, clock, lambda_offers(), "lambdalabs")
    report = do_ingest(engine, settings, clock, batch(*scaled(lambda_offers(), "1000")), provider="lambdalabs")
    assert report.status == "quarantined"
    assert report.error == (
        "empty batch: no valid offers (16 set aside as invalid or unknown) where the last good run had 16; prices kept"
    )
    assert state(engine, "lambdalabs") == before


def test_empty_batch_on_a_small_provider_is_quarantined(engine, settings, clock):
    before = good_run(engine, settings, clock, lambda_offers(), "lambdalabs")
    report = do_ingest(engine, settings, clock, batch(), provider="lambdalabs")
    assert (report.status, report.error) == (
        "quarantined",
        "empty batch: no valid offers where the last good run had 16; prices kept",
    )
    assert state(engine, "lambdalabs") == before


def test_halved_batch_on_a_small_provider_is_quarantined(engine, settings, clock):
    before = good_run(engine, settings, clock, lambda_offers(), "lambdalabs")
    report = do_ingest(engine, settings, clock, batch(*lambda_offers()[:7]), provider="lambdalabs")
    assert report.status == "quarantined"
    assert report.error == (
        "offer count collapsed from 16 to 7 valid offers, below 50% of the last good run; prices kept"
    )
    assert state(engine, "lambdalabs") == before
    # Exactly half is not below half: applied, and the other half delisted.
    report = do_ingest(engine, settings, clock, batch(*lambda_offers()[:8]), provider="lambdalabs")
    assert (report.status, report.offers_closed) == ("ok", 8)


@pytest.mark.parametrize(
    ("previous", "now", "status"),
    [
        (1, 0, "quarantined"),  # empty: caught whatever the size
        (2, 0, "quarantined"),
        (2, 1, "ok"),  # a two-offer provider losing one: normal churn, the lost one is delisted
        (3, 1, "ok"),  # below half but only 2 lost: still churn on a provider this small
        (4, 1, "quarantined"),  # below half and 3 lost
        (5, 2, "quarantined"),
        (6, 3, "ok"),  # half is not below half
    ],
)
def test_tiny_provider_counts(engine, settings, clock, previous, now, status):
    offers = lambda_offers()[:previous]
    good_run(engine, settings, clock, offers, "shadeform")
    report = do_ingest(engine, settings, clock, batch(*offers[:now]), provider="shadeform")
    assert report.status == status, report.error
    _, listed, _ = state(engine, "shadeform")
    assert listed == (now if status == "ok" else previous)
    if status == "ok":
        assert report.offers_closed == previous - now


@pytest.mark.parametrize("factor", ["1.25", "0.75"])
def test_market_wide_move_of_a_quarter_is_applied(engine, settings, clock, factor):
    offers = vast_offers()
    good_run(engine, settings, clock, offers, "vastai")
    report = do_ingest(engine, settings, clock, batch(*scaled(offers, factor)), provider="vastai")
    assert (report.status, report.price_rows, report.offers_closed) == ("ok", len(offers), 0), report.error


def test_a_few_offers_tripling_is_applied(engine, settings, clock):
    """3 of 50 offers triple; they are the only offers of their card, so that card's median jumps ×3:
    one card of 17 is a genuine move, not a broken batch."""
    offers = vast_offers(47) + [offer(f"t4-{i}", f"0.{20 + i}", gpu="T4") for i in range(3)]
    good_run(engine, settings, clock, offers, "vastai")
    report = do_ingest(
        engine, settings, clock, batch(*scaled(offers, "3", {"t4-0", "t4-1", "t4-2"})), provider="vastai"
    )
    assert (report.status, report.price_rows) == ("ok", 3), report.error


def test_level_is_compared_with_the_last_good_run_not_the_quarantined_one(engine, settings, clock):
    offers = vast_offers()
    before = good_run(engine, settings, clock, offers, "vastai")
    for _ in range(2):  # a repeated ×100 stays quarantined: it never becomes the reference
        assert do_ingest(engine, settings, clock, batch(*scaled(offers, "100"))).status == "quarantined"
        clock.advance(minutes=10)
    report = do_ingest(engine, settings, clock, batch(*offers))  # the good prices again: nothing to write
    assert (report.status, report.price_rows) == ("ok", 0)
    assert state(engine, "vastai") == before


def test_new_keys_at_a_new_level_are_caught_by_card_medians(engine, settings, clock):
    """Every key changed (e.g. a new key format) and prices ×100: no offer in common, so each card's
    median price is compared instead — rather than delisting 320 offers and listing 320 wrong ones."""
    offers = vast_offers()
    before = good_run(engine, settings, clock, offers, "vastai")
    renamed = [replace(o, key=f"v2-{o.key}") for o in scaled(offers, "100")]
    report = do_ingest(engine, settings, clock, batch(*renamed))
    assert report.status == "quarantined" and report.error.startswith("price level ×100.0"), report.error
    assert state(engine, "vastai") == before


def test_first_run_has_no_level_to_compare_with(engine, settings, clock):
    report = do_ingest(engine, settings, clock, batch(*scaled(vast_offers(), "100")))
    assert report.status == "ok"


def test_thresholds_are_settings(engine, settings, clock):
    offers = vast_offers()
    good_run(engine, settings, clock, offers, "vastai")
    strict = settings.model_copy(update={"quarantine_price_ratio": 1.2})
    report = do_ingest(engine, strict, clock, batch(*scaled(offers, "1.25")))
    assert report.status == "quarantined" and report.error.startswith("price level ×1.2"), report.error


def test_a_second_replay_of_every_demo_cassette_is_not_quarantined(engine, settings, clock):
    for _ in range(2):
        reports = asyncio.run(run_scrape(plan([], demo=True), engine, settings, clock=clock))
        assert {r.provider: (r.status, r.error) for r in reports if r.status != "ok"} == {}
        clock.advance(minutes=10)
    assert all(r.price_rows == 0 for r in reports)


def test_quarantined_batch_reopens_nothing_and_reports_nothing_applied(engine, settings, clock):
    offers = lambda_offers()
    good_run(engine, settings, clock, offers, "lambdalabs")
    good_run(engine, settings, clock, offers[1:], "lambdalabs")  # one offer delisted: 16 → 15 is churn
    before = state(engine, "lambdalabs")
    report = do_ingest(engine, settings, clock, batch(*scaled(offers, "10")), provider="lambdalabs")
    assert (report.status, report.offers_reopened, report.offers_new, report.price_rows) == ("quarantined", 0, 0, 0)
    assert state(engine, "lambdalabs") == before  # the delisted offer stays delisted
