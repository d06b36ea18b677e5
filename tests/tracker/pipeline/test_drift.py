"""The drift check: what a parser needs is learned by tracing it over its baseline; a live body missing a
needed field, retyping one or adding one is reported; unresolved names and price moves are drift too."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

import providers.http as http
from providers.adapters.vastai import VastAi
from providers.cassette import Cassette, Interaction, ReplayTransport, bundled_cassette
from providers.contract import FetchContext, Provider, ProviderKind, ScrapedOffer, ScrapeResult
from providers.http import get_json, require
from providers.parsing import to_decimal
from providers.registry import PROVIDERS
from providers.schema import ANY_ELEMENT, ANY_KEY, Capture, KeyPath, capture_json, endpoint_of, format_path
from tests.factories.cassettes import mutated_cassette
from tracker.config import Settings
from tracker.pipeline import drift
from tracker.pipeline.drift import FieldIssue, PriceMove, Spread, check_provider, learn_baseline, schema_warnings
from tracker.pipeline.scraping import plan, run_scrape

# --- a provider written for these tests, so that what is "needed" does not follow adapter edits --------

URL = "https://api.example.test/v1/types"
ENDPOINT = "GET api.example.test/v1/types"


class Fake(Provider):
    """Reads a map of instance types (keys are data), page by page; `region` and `next` are optional."""

    name = "fake"
    title = "Fake"
    kind = ProviderKind.marketplace

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        result = ScrapeResult()
        cursor = ""
        while True:
            payload = await get_json(ctx, URL + (f"?page={cursor}" if cursor else ""))
            for key, item in require(payload, "types", "response").items():
                result.offers.append(
                    ScrapedOffer(
                        key=key,
                        gpu_name=str(require(item, "gpu", key)),
                        gpu_count=Decimal(1),
                        price_per_hour=to_decimal(item.get("price"), f"{key}.price"),
                        region=item.get("region") or "",
                    )
                )
            cursor = payload.get("next") or ""
            if not cursor:
                return result


PAGE_1 = {
    "types": {"h100x1": {"gpu": "H100 SXM 80GB", "price": 2.5, "region": "us", "spare": 1}},
    "next": "2",
}
PAGE_2 = {"types": {"a100x1": {"gpu": "A100 SXM 80GB", "price": "1.5", "spare": 2}}}


def fake_cassette(*pages: dict[str, Any]) -> Cassette:
    urls = [URL] + [f"{URL}?page={i}" for i in range(2, len(pages) + 1)]
    return Cassette(
        "fake",
        [
            Interaction("GET", u, None, 200, {"content-type": "application/json"}, p)
            for u, p in zip(urls, pages, strict=True)
        ],
    )


@pytest.fixture(scope="module")
def fake_baseline() -> drift.Baseline:
    return asyncio.run(learn_baseline(Fake, fake_cassette(PAGE_1, PAGE_2)))


def paths(*formatted: str) -> set[str]:
    return set(formatted)


def test_needed_fields_are_those_the_parser_reads_and_every_object_has(fake_baseline):
    needs = fake_baseline.endpoints[ENDPOINT]
    assert {format_path(p) for p in needs.needed} == paths("types", "types.*.gpu", "types.*.price")
    # Iterated, so its keys are data: pooled as `*`, never "new fields" when an instance type appears.
    assert needs.maps == {("types",)}
    assert ("types", ANY_KEY, "spare") in needs.known  # present but unread: not needed
    assert fake_baseline.offers == 2 and fake_baseline.unknown_names == frozenset()


def warnings_for(baseline: drift.Baseline, *pages: dict[str, Any]) -> list[str]:
    capture = Capture.of((ENDPOINT, p) for p in pages)
    return [str(i) for i in schema_warnings(baseline, capture)]


def test_unchanged_and_reshuffled_map_keys_are_no_drift(fake_baseline):
    assert warnings_for(fake_baseline, PAGE_1, PAGE_2) == []
    other_keys = {"types": {"l40sx8": {"gpu": "L40S", "price": 9}}}  # no `next`, no `region`: both optional
    assert warnings_for(fake_baseline, other_keys) == []


def test_a_needed_field_gone_from_every_object_is_missing(fake_baseline):
    page = {"types": {"h100x1": {"gpu": "H100", "cost": 2.5}, "b": {"gpu": "B200", "cost": 5}}}
    issues = schema_warnings(fake_baseline, {ENDPOINT: page})
    assert issues[0] == FieldIssue(ENDPOINT, "types.*.price", "missing")
    assert issues[0].drift
    assert FieldIssue(ENDPOINT, "types.*.cost", "new") in issues
    assert str(issues[0]) == f"missing field `types.*.price` in {ENDPOINT}"


def test_a_field_in_some_objects_only_is_not_missing(fake_baseline):
    page = {"types": {"h100x1": {"gpu": "H100", "price": 2.5}, "b": {"gpu": "B200"}}}
    assert warnings_for(fake_baseline, page) == []


def test_a_new_field_is_reported_once_at_its_outermost_key_and_is_no_drift(fake_baseline):
    page = {"types": {"h100x1": {"gpu": "H100", "price": 2.5, "spec": {"arch": "hopper", "tdp": 700}}}}
    issues = schema_warnings(fake_baseline, {ENDPOINT: page})
    assert issues == [FieldIssue(ENDPOINT, "types.*.spec", "new")]
    assert not issues[0].drift


def test_a_changed_kind_is_drift_but_null_is_not(fake_baseline):
    page = {"types": {"h100x1": {"gpu": "H100", "price": {"amount": 2.5}}}}
    (issue,) = [i for i in schema_warnings(fake_baseline, {ENDPOINT: page}) if i.drift]
    assert (issue.field, issue.change, issue.detail) == ("types.*.price", "type", "number/string → object")
    assert warnings_for(fake_baseline, {"types": {"x": {"gpu": "H100", "price": None}}}) == []


def test_an_empty_listing_or_a_retyped_body_is_judged_only_where_it_can_be(fake_baseline):
    assert warnings_for(fake_baseline, {"types": {}}) == []  # no objects to hold the fields: nothing missing
    (issue,) = schema_warnings(fake_baseline, {ENDPOINT: [{"gpu": "H100"}]})
    assert (issue.field, issue.change, issue.detail) == ("(body)", "type", "object → array")


def test_an_endpoint_the_fetch_did_not_reach_is_not_judged(fake_baseline):
    assert schema_warnings(fake_baseline, {"GET elsewhere.test/x": {"a": 1}}) == []


def test_tracing_hands_the_parser_real_dicts_and_ends_with_the_capture():
    body = {"a": {"b": [{"c": 1}]}}
    request = httpx.Request("GET", "https://api.example.test/x?key=secret")
    response = httpx.Response(200, json=body, request=request)
    with capture_json(trace=True) as capture:
        traced = http.decode_json(response)
        assert isinstance(traced, dict) and isinstance(traced["a"]["b"], list)
        assert traced == body and traced.get("zzz", 5) == 5 and "a" in traced
        assert traced["a"]["b"][0]["c"] == 1
    assert endpoint_of(request) == "GET api.example.test/x"  # the query (and its key) is no part of it
    assert capture.read_paths("GET api.example.test/x") >= {("a",), ("a", "b"), ("a", "b", ANY_ELEMENT, "c"), ("zzz",)}
    plain = http.decode_json(response)
    assert type(plain) is dict  # no capture active: the hook is the plain function


def test_concurrent_captures_see_only_their_own_bodies():
    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={request.url.path.strip("/"): 1})

    async def fetch(path: str) -> Capture:
        with capture_json() as capture:
            async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
                ctx = FetchContext(client=client)
                for _ in range(3):
                    await get_json(ctx, f"https://api.example.test/{path}")
                    await asyncio.sleep(0)
        return capture

    async def both() -> list[Capture]:
        return list(await asyncio.gather(fetch("one"), fetch("two")))

    one, two = asyncio.run(both())
    assert one.endpoints() == ["GET api.example.test/one"] and one.bodies == 3
    assert two.endpoints() == ["GET api.example.test/two"] and two.bodies == 3


# --- every adapter, generically ----------------------------------------------------------------------


def _bodies(cassette: Cassette) -> list[tuple[str, Any]]:
    """The answers an adapter decodes: JSON bodies of successful exchanges."""
    return [
        (endpoint_of(httpx.Request(i.method, i.url)), i.json_body)
        for i in cassette.interactions
        if i.status < 400 and i.json_body is not None
    ]


def _drop(node: Any, path: KeyPath) -> None:
    """Delete the key at `path` (a normalised key path) from every object that holds it."""
    if not path:
        return
    head, rest = path[0], path[1:]
    if head == ANY_ELEMENT:
        for item in node if isinstance(node, list) else ():
            _drop(item, rest)
    elif isinstance(node, dict):
        children = list(node) if head == ANY_KEY else [head] if head in node else []
        for key in children:
            if rest:
                _drop(node[key], rest)
            else:
                del node[key]


def _json_providers() -> list[Any]:
    return [pytest.param(p, id=p.name) for p in PROVIDERS if p.kind != ProviderKind.static_sheet]


@pytest.mark.parametrize("provider", [pytest.param(p, id=p.name) for p in PROVIDERS])
def test_every_adapter_shows_no_drift_against_its_own_bundled_cassette(provider: type[Provider]):
    cassette = (
        Cassette(provider.name, [])
        if provider.kind == ProviderKind.static_sheet
        else Cassette.load(bundled_cassette(provider.name))
    )
    report = asyncio.run(
        check_provider(
            provider,
            ReplayTransport(cassette),
            credentials=drift._replay_credentials(provider),
            settings=Settings(),
            source="replay",
        )
    )
    assert report.status == "ok", report.problems()
    assert not report.schema, report.schema


# AWS publishes CSV, IONOS a script bundle, Atlantic.Net JSON-LD inside an HTML page: their schema is not compared.
NOT_JSON = {"aws", "atlanticnet", "ionos"}


@pytest.mark.parametrize("provider", _json_providers())
def test_removing_any_needed_field_of_any_adapter_is_reported_missing(provider: type[Provider]):
    baseline = asyncio.run(drift.baseline_for(provider))
    if not baseline.endpoints:  # only a provider known to answer in another format may learn nothing
        assert provider.name in NOT_JSON, f"{provider.name}: no JSON endpoint learned from its cassette"
        return
    bodies = _bodies(Cassette.load(bundled_cassette(provider.name)))
    for endpoint, needs in baseline.endpoints.items():
        assert needs.needed, f"{provider.name}: no needed field learned at {endpoint}"
        for path in needs.needed:
            drifted = copy.deepcopy(bodies)
            for e, body in drifted:
                if e == endpoint:
                    _drop(body, path)
            issues = schema_warnings(baseline, Capture.of(drifted))
            assert FieldIssue(endpoint, format_path(path), "missing") in issues, (format_path(path), issues)


# --- adapters end to end ----------------------------------------------------------------------------


def vastai_offers(mutate: Callable[[dict[str, Any]], None]) -> Cassette:
    """The bundled vastai cassette with `mutate` applied to every offer of every answer."""

    def each(raw: dict[str, Any]) -> None:
        for interaction in raw["interactions"]:
            for offer in (interaction["response"].get("json") or {}).get("offers", []):
                mutate(offer)

    return mutated_cassette(VastAi, each)


def replay_check(cassette: Cassette, **kw: Any) -> drift.ProviderDrift:
    return asyncio.run(
        check_provider(VastAi, ReplayTransport(cassette), credentials={}, settings=kw.pop("settings", Settings()), **kw)
    )


def test_vastai_without_dph_total_is_drifted_and_names_the_field():
    report = replay_check(vastai_offers(lambda o: o.pop("dph_total")))
    assert report.drifted and report.status == "drifted"
    assert report.problems() == ["missing field `offers[].dph_total` in POST console.vast.ai/api/v0/bundles"]
    assert report.error is None  # the parser falls back to dph_base: only the drift check notices


def test_a_parse_error_is_reported_with_the_schema_diff_that_explains_it():
    # Every offer malformed: each is dropped with its reason (providers.parsing.dropping), so the fetch
    # comes back empty: drifted, with the dropped objects and the schema diff that explains them.
    report = replay_check(vastai_offers(lambda o: o.pop("gpu_name")))
    assert report.status == "drifted" and report.empty and report.error is None
    assert report.dropped and all("gpu_name" in r for r in report.dropped)
    assert "missing field `offers[].gpu_name` in POST console.vast.ai/api/v0/bundles" in report.problems()


def test_doctor_shows_one_dropped_object_and_keeps_the_rest():
    first = {"done": False}

    def break_first(offer: dict[str, Any]) -> None:
        if not first["done"]:
            offer["num_gpus"], first["done"] = "", True

    report = replay_check(vastai_offers(break_first))
    assert report.error is None and report.offers > 0
    assert len(report.dropped) == 1 and "offers[0]: dropped" in report.dropped[0]
    assert any("1 malformed object(s) dropped" in n for n in report.notes())
    assert report.as_dict()["dropped"]["count"] == 1


def test_unresolvable_gpu_names_are_drift_beyond_those_the_baseline_has():
    baseline = asyncio.run(drift.baseline_for(VastAi))
    report = replay_check(vastai_offers(lambda o: o.update(gpu_name="Quantum Q9000")))
    assert set(report.unknown_names) == {"Quantum Q9000"} and report.drifted
    unchanged = replay_check(Cassette.load(bundled_cassette("vastai")))
    assert set(unchanged.known_unknown_names) == set(baseline.unknown_names) and not unchanged.drifted


def test_a_listing_with_no_offers_is_drift():
    report = replay_check(mutated_cassette(VastAi, lambda raw: _empty_offers(raw)))
    assert report.empty and "no offers fetched (the baseline has some)" in report.problems()


def _empty_offers(raw: dict[str, Any]) -> None:
    for interaction in raw["interactions"]:
        if isinstance(interaction["response"].get("json"), dict):
            interaction["response"]["json"]["offers"] = []


def _scaled(offer: dict[str, Any], factor: float) -> None:
    for key in ("dph_total", "dph_base", "min_bid"):
        if isinstance(offer.get(key), int | float):
            offer[key] = offer[key] * factor


def test_prices_are_compared_with_the_offers_the_database_lists(engine, settings):
    (stored,) = asyncio.run(run_scrape(plan(["vastai"], replay=bundled_cassette("vastai")), engine, settings))
    assert stored.status == "ok", stored.error
    same = replay_check(Cassette.load(bundled_cassette("vastai")), engine=engine, settings=settings)
    assert same.prices and not any(m.flagged for m in same.prices) and not same.drifted
    doubled = replay_check(vastai_offers(lambda o: _scaled(o, 2)), engine=engine, settings=settings)
    assert doubled.drifted and all(m.flagged and round(m.ratio, 2) == 2.0 for m in doubled.prices)
    assert any(line.startswith("price of ") and "×2.00" in line for line in doubled.problems())


def test_no_database_rows_means_no_price_comparison(engine, settings):
    report = replay_check(vastai_offers(lambda o: _scaled(o, 2)), engine=engine, settings=settings)
    assert report.prices == [] and not report.drifted
    assert report.price_note == "prices not compared: the database lists no offers of this provider yet"


def test_spread_and_the_move_factor():
    assert Spread.of([Decimal("2")]) == Spread(1, 2.0, 2.0, 2.0)
    spread = Spread.of([Decimal(v) for v in (1, 2, 3, 4, 5)])
    assert (spread.p10, spread.median, spread.p90) == pytest.approx((1.4, 3.0, 4.6))
    one = Spread.of([Decimal(1)])
    assert not PriceMove("H100", "on_demand", one, Spread.of([Decimal("1.5")])).flagged
    assert PriceMove("H100", "on_demand", one, Spread.of([Decimal("1.51")])).flagged
    assert PriceMove("H100", "on_demand", one, Spread.of([Decimal("0.6")])).flagged
    assert not PriceMove("H100", "on_demand", one, Spread.of([Decimal("0.7")])).flagged


# --- several providers, through an injected transport -----------------------------------------------


def test_run_doctor_skips_providers_without_credentials_and_uses_the_injected_transport(monkeypatch):
    monkeypatch.delenv("TRACKER_LAMBDA_API_KEY", raising=False)
    monkeypatch.delenv("TRACKER_LAMBDA_API_KEY_FILE", raising=False)
    drifted = vastai_offers(lambda o: o.pop("dph_total"))
    asked: list[str] = []

    def transport(provider: type[Provider]) -> httpx.AsyncBaseTransport:
        asked.append(provider.name)
        return ReplayTransport(drifted)

    settings = Settings(secrets_dir=None)
    reports = asyncio.run(
        drift.run_doctor(["vastai", "lambdalabs"], settings=settings, engine=None, transport=transport)
    )
    by_name = {r.provider: r for r in reports}
    assert asked == ["vastai"]
    assert by_name["lambdalabs"].status == "skipped"
    assert "TRACKER_LAMBDA_API_KEY" in (by_name["lambdalabs"].skipped or "")
    assert by_name["vastai"].status == "drifted" and by_name["vastai"].source == "live"


def test_run_doctor_rejects_bad_input_before_fetching(tmp_path: Path):
    settings = Settings()
    with pytest.raises(ValueError, match="exactly one provider"):
        asyncio.run(
            drift.run_doctor(["vastai", "runpod"], settings=settings, engine=None, replay=bundled_cassette("vastai"))
        )
    other = tmp_path / "other.json"
    other.write_text(json.dumps(Cassette.load(bundled_cassette("runpod")).to_json()))
    with pytest.raises(ValueError, match="cassette of runpod, not of vastai"):
        asyncio.run(drift.run_doctor(["vastai"], settings=settings, engine=None, replay=other))


def test_a_fetch_that_failed_on_its_own_is_failed_not_drifted():
    """Offline, every provider's fetch fails: that says nothing about drift, and is counted apart."""
    from tracker.pipeline.drift import ProviderDrift

    offline = ProviderDrift("akash", "live", error="gave up after 4 attempts: ConnectError")
    assert offline.status == "failed" and not offline.drifted
    assert offline.problems() == ["fetch failed: gave up after 4 attempts: ConnectError"]
    skipped = ProviderDrift("gcp", "live", skipped="no credentials (set TRACKER_GCP_API_KEY)")
    assert skipped.status == "skipped" and not skipped.drifted


def test_doctor_offline_says_could_not_be_fetched_and_skipped_once(cli, monkeypatch):
    import httpx

    from tracker.pipeline import drift

    def offline(provider):
        def refuse(request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError("no network", request=request)

        return httpx.MockTransport(refuse)

    monkeypatch.setattr(drift, "_live_transport", offline)
    monkeypatch.setenv("TRACKER_HTTP_RETRIES", "0")
    from tracker.config import get_settings

    get_settings.cache_clear()
    result = cli("doctor", "vastai", "gcp")
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "skipped: skipped:" not in text and "gcp: skipped: no credentials" in text
    assert "0 of 1 providers checked drifted; 1 could not be fetched" in text and "1 skipped (no credentials)" in text
