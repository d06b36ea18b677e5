"""The index computed in one pass over every area and day (tracker.market.index._series) gives exactly the
values of the rule applied to one area's day at a time, as the methodology first computed them: the same
floats, so a value published under a version is never rewritten by a faster implementation of it."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from tracker.config import Settings
from tracker.market import aggregated, freshness, index
from tracker.market.index import IndexHistory, IndexOffer, IndexPrice, IndexValue, PriceColumns, compute

START = datetime(2026, 8, 1, tzinfo=UTC)
DAYS = 75  # crusoe's rate sheet (as of 2026-08-19) stops counting inside the window
CLOUDS = ("aws", "azure", "gcp", "lambdalabs", "fluidstack", "digitalocean", "cudo", "denvr", "runpod", "vastai")
REGIONS = ("us-east-1", "eu-west-1", "ap-northeast-1", "nowhere-known")
H100 = "H100-SXM-80GB"


def _history(seed: int) -> IndexHistory:
    """Twelve providers (ten clouds, one with most of the listings, a rate sheet, an aggregator reselling
    two others), prices drawn from a few values so that days have ties, closed and reopened rows, and one
    cloud down for four days."""
    rng = random.Random(seed)
    offers, prices = [], []
    end = START + timedelta(days=DAYS)
    sellers = [(c, rng.randint(1, 40)) for c in CLOUDS[:-1]] + [("vastai", 150), ("crusoe", 6), ("shadeform", 12)]
    for provider, n in sellers:
        for i in range(n):
            attributes: dict[str, object] = {"hosting": "datacenter"}
            count = Decimal(rng.choice((1, 8)))
            if provider == "shadeform":
                attributes |= {"via": "shadeform", "upstream": rng.choice(("lambdalabs", "hyperstack"))}
            # Only two providers list in APAC: that area's days publish no value, and say why.
            region = rng.choice(REGIONS if provider in ("aws", "gcp") else REGIONS[:2] + REGIONS[3:])
            last_seen = end - timedelta(hours=6) if rng.random() < 0.9 else START + timedelta(days=rng.randint(5, 60))
            o = IndexOffer(
                provider, f"{provider}-{i}", H100, "H100", count, "on_demand", None, region, attributes, last_seen
            )
            offers.append(o)
            at = START - timedelta(days=rng.randint(0, 10))
            while at < last_seen:
                step = timedelta(hours=6 * rng.randint(1, 40))
                to = at + step if at + step < last_seen or rng.random() < 0.3 else None
                price = rng.choice((1.5, 1.75, 2.0, 2.25, 2.5, 3.1)) * rng.choice((1.0, 1.0, 1.01))
                prices.append(
                    IndexPrice(
                        provider, o.offer_key, index.epoch_us(at), None if to is None else index.epoch_us(to), price
                    )
                )
                if to is None:
                    break
                at = to + (timedelta(hours=6) if rng.random() < 0.1 else timedelta(0))  # sometimes a gap
    observations: dict[str, list[int]] = {}
    for provider, _ in sellers:
        t = START - timedelta(days=10)
        while t < end:
            if not (provider == "cudo" and START + timedelta(days=30) <= t < START + timedelta(days=34)):
                observations.setdefault(provider, []).append(index.epoch_us(t))
            t += timedelta(hours=6)
    rng.shuffle(prices)
    return IndexHistory(offers, prices, observations)


def _one_group_at_a_time(history: IndexHistory, start: date, end: date, settings: Settings) -> list[IndexValue]:
    """The rule as first written: for each area, for each day, its offers' seconds and mean prices, then
    duplicates, provider weights, trimming and quartiles over that day alone."""
    m = index.method(index.CURRENT)
    offers = sorted(
        (o for o in history.offers if index.offer_excluded(o, m) is None), key=lambda o: (o.provider, o.offer_key)
    )
    counted = sorted(
        range(len(history.offers)), key=lambda i: (history.offers[i].provider, history.offers[i].offer_key)
    )
    counted = [i for i in counted if index.offer_excluded(history.offers[i], m) is None]
    start_us, end_us = (
        index.epoch_us(datetime.combine(start, datetime.min.time(), UTC)),
        index.epoch_us(datetime.combine(end, datetime.min.time(), UTC)),
    )
    spans = index._spans(history, offers, counted, start_us, end_us, settings)
    names = sorted({o.provider for o in offers})
    code = np.array([names.index(o.provider) for o in offers])
    sheets = freshness.sheet_dates()
    sheet_day = np.array([sheets[o.provider].toordinal() if o.provider in sheets else -1 for o in offers])
    resale = np.array([bool(o.attributes.get("via")) for o in offers])
    n_days = (end_us - start_us) // index._DAY_US
    out = []
    for area in index.AREAS:
        members = np.array([index.in_area(o, area) for o in offers], dtype=bool)
        sel = members[spans["offer"]]
        lo, hi, offer, price = spans["lo"][sel], spans["hi"][sel], spans["offer"][sel], spans["price"][sel]
        first, last = (lo - start_us) // index._DAY_US, (hi - start_us - 1) // index._DAY_US
        count = np.maximum(last - first + 1, 0)
        idx = np.repeat(np.arange(len(lo)), count)
        day = np.repeat(first, count) + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
        d_start = start_us + day * index._DAY_US
        weight = (np.minimum(hi[idx], d_start + index._DAY_US) - np.maximum(lo[idx], d_start)).astype(np.float64)
        order = np.argsort(day, kind="stable")
        idx, day, weight = idx[order], day[order], weight[order]
        bounds = np.searchsorted(day, np.arange(n_days + 1))
        for d in range(n_days):
            a, b = bounds[d], bounds[d + 1]
            on = start + timedelta(days=d)
            out.append(
                _day(
                    offers,
                    names,
                    code,
                    sheet_day,
                    resale,
                    offer[idx[a:b]],
                    price[idx[a:b]],
                    weight[a:b],
                    m,
                    area,
                    on,
                    settings,
                )
            )
    return out


def _day(offers, names, code, sheet_day, resale, offer, price, seconds, m, area, on, settings) -> IndexValue:
    def empty(reason, providers=(), n=0):
        return IndexValue(m.version, "H100", area, on, None, None, None, None, n, providers, reason)

    if not len(offer):
        return empty("no offers")
    all_secs = np.bincount(offer, weights=seconds, minlength=len(offers))
    ids = np.flatnonzero(all_secs > 0)
    secs = all_secs[ids]
    mean = np.bincount(offer, weights=price * seconds, minlength=len(offers))[ids] / secs
    keep = (sheet_day[ids] < 0) | (on.toordinal() - sheet_day[ids] <= settings.sheet_max_age_days)
    if resale[ids].any():
        listed = [offers[i] for i in ids.tolist()]
        keep = aggregated.dedupe(
            keep,
            provider=[o.provider for o in listed],
            via=[o.attributes.get("via") for o in listed],
            upstream=[o.attributes.get("upstream") for o in listed],
            gpu_id=[o.gpu_id for o in listed],
            gpu_count=[o.gpu_count for o in listed],
            pricing=[o.pricing for o in listed],
            reserved_term=[o.reserved_term for o in listed],
            price_per_gpu_hour=mean.tolist(),
            ids=ids.tolist(),
        )
    if not keep.any():
        return empty("no offers")
    ids, secs, mean = ids[keep], secs[keep], mean[keep]
    codes, provider = np.unique(code[ids], return_inverse=True)
    raw = np.bincount(provider, weights=secs)
    share = index._capped(raw, m.provider_cap)
    n_offers = np.bincount(provider, minlength=len(codes))
    used = tuple(
        (names[c], k, index._money(w))
        for c, k, w in zip(codes.tolist(), n_offers.tolist(), share.tolist(), strict=True)
    )
    if len(codes) < m.min_providers:
        return empty(f"{len(codes)} provider(s), fewer than the {m.min_providers} needed", used, len(ids))
    w = secs / raw[provider] * share[provider]
    order = np.lexsort((ids, mean))
    p, w = mean[order], w[order]
    w = w / w.sum()
    value = index._trimmed_mean(p, w, m.trim)
    q25, q75 = index._quantile(p, w, 0.25), index._quantile(p, w, 0.75)
    money = index._money
    return IndexValue(
        m.version, "H100", area, on, money(value), money(q25), money(q75), money((q75 - q25) / value), len(ids), used
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_pass_over_every_area_and_day_equals_the_rule_one_day_at_a_time(seed):
    settings = Settings()
    history = _history(seed)
    start, end = START.date(), START.date() + timedelta(days=DAYS)
    fast = compute(history, gpu_ids=[H100], basket="H100", start=start, end=end, settings=settings)
    slow = _one_group_at_a_time(history, start, end, settings)
    assert fast == slow
    _exercises_the_rule(fast)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_floats_before_rounding_are_identical_too(seed, monkeypatch):
    """Equal rounded values could hide a last-bit difference that one day rounds the other way: compared
    unrounded, every value, quartile, spread and share is the same double."""
    monkeypatch.setattr(index, "_money", float)
    settings = Settings()
    history = _history(seed)
    start, end = START.date(), START.date() + timedelta(days=DAYS)
    fast = compute(history, gpu_ids=[H100], basket="H100", start=start, end=end, settings=settings)
    assert fast == _one_group_at_a_time(history, start, end, settings)
    assert all(isinstance(v.value, float) for v in fast if v.published)


def _exercises_the_rule(fast: list[IndexValue]) -> None:
    """The history really exercises the rule: capped shares, resales dropped, the sheet going stale, an
    area with too few providers."""
    assert sum(v.published for v in fast) == DAYS * 3  # global, US and EU every day
    assert any(w == Decimal("0.250000") for v in fast for _, _, w in v.providers)
    assert any("crusoe" in [p for p, _, _ in v.providers] for v in fast)
    assert not any("crusoe" in [p for p, _, _ in v.providers] for v in fast if v.day > date(2026, 10, 3))
    assert {v.reason for v in fast if v.area == "apac"} == {"2 provider(s), fewer than the 3 needed"}
    resold = [n for v in fast for p, n, _ in v.providers if p == "shadeform"]
    # Twelve resales: lambdalabs' machines are listed directly (dropped), hyperstack's are not (one per
    # machine kept: 1 or 8 GPUs).
    assert resold and max(resold) <= 2


def test_price_columns_give_the_values_of_price_tuples():
    settings = Settings()
    history = _history(4)
    assert isinstance(history.prices, list)
    at = {(o.provider, o.offer_key): i for i, o in enumerate(history.offers)}
    columns = PriceColumns(
        np.array([at[(p.provider, p.offer_key)] for p in history.prices], dtype=np.int64),
        np.array([p.valid_from_us for p in history.prices], dtype=np.int64),
        np.array([-1 if p.valid_to_us is None else p.valid_to_us for p in history.prices], dtype=np.int64),
        np.array([p.price_per_gpu_hour for p in history.prices]),
    )
    kw: dict[str, Any] = {
        "gpu_ids": [H100],
        "basket": "H100",
        "start": START.date(),
        "end": START.date() + timedelta(days=20),
    }
    as_tuples = compute(history, settings=settings, **kw)
    as_columns = compute(IndexHistory(history.offers, columns, history.observations), settings=settings, **kw)
    assert as_columns == as_tuples and any(v.published for v in as_tuples)


def test_a_row_of_a_table_sums_exactly_as_that_row_alone():
    """What the cap's table of groups relies on (numpy sums pairwise, so a sum depends on its length and
    order): a C-contiguous row sum is the 1-D sum of that row, at every length."""
    rng = np.random.default_rng(28)
    for n in [*range(1, 160), 1000, 9000]:
        table = rng.random((6, n)) * rng.choice([1e-3, 1.0, 1e9], size=(6, 1))
        assert (table.sum(axis=1) == np.array([row.copy().sum() for row in table])).all(), n


def test_capped_rows_are_capped_one_row_at_a_time():
    rng = np.random.default_rng(5)
    for n in range(5, 40):
        raw = rng.random((20, n)) ** 6 * 1e9  # a few heavy providers: the cap binds, often more than once
        raw[::3, 0] *= 1e4
        assert (index._capped_rows(raw, 0.25) == np.stack([index._capped(r, 0.25) for r in raw])).all(), n


def test_quartiles_of_every_group_at_once_match_each_group_alone():
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 60, size=50)
    group = np.repeat(np.arange(50), sizes)
    p = np.concatenate([np.sort(rng.choice([1.0, 1.5, 2.0, 2.5, 4.0], size=k)) for k in sizes])
    w = rng.random(len(p))
    bounds = np.searchsorted(group, np.arange(51))
    cum = np.concatenate([np.cumsum(w[a:b] / w[a:b].sum()) for a, b in itertools.pairwise(bounds.tolist())])
    wanted = np.arange(0, 50, 2)
    for q in (0.25, 0.75):
        got = index._quantiles(p, cum, group, bounds, wanted, q)
        for g in wanted.tolist():
            a, b = bounds[g], bounds[g + 1]
            assert got[g] == index._quantile(p[a:b], w[a:b] / w[a:b].sum(), q)
