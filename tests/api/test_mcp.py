"""The MCP server (api.mcp), driven by the official SDK's own client, in-process and over streamable HTTP.

Every tool answers with the numbers the CLI's `--json` prints for the same input (and, for `market`,
which has no CLI command, the numbers GET /v1/market serves); bad input is a tool error whose text is
the API's error body; the HTTP transport is behind the API's bearer token.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from api.app import create_app
from api.mcp import TOOLS, build_server
from api.mcp.http import http_app
from providers.adapters.reference import ReferenceRates
from providers.adapters.vastai import VastAi
from providers.cassette import Cassette, bundled_cassette
from tests.factories.alerts import add_rule
from tracker.catalog.gpus import get_catalog
from tracker.clock import utcnow
from tracker.pipeline.scraping import ScrapeJob, run_scrape

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Fields that move with the clock between two calls a moment apart.
_MOVING = {"as_of", "price_age_s", "age_s", "age_seconds", "age_hours", "age_days", "staleness_s"}


@pytest.fixture
def seeded(engine, settings):
    """The reference sheet and Vast's bundled cassette ingested now; one alert rule."""
    jobs = [ScrapeJob(ReferenceRates), ScrapeJob(VastAi, "replay", Cassette.load(bundled_cassette("vastai")))]
    asyncio.run(run_scrape(jobs, engine, settings))
    add_rule(engine, settings, utcnow(), name="cheap H100", threshold="1.50")
    yield


def _steady(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in _MOVING}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _call(engine, settings, tool: str, arguments: dict[str, Any]) -> Any:
    async def go() -> Any:
        async with Client(build_server(engine, settings)) as client:
            return await client.call_tool(tool, arguments)

    return asyncio.run(go())


def _ok(engine, settings, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = _call(engine, settings, tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def _cli_json(cli, *args: str) -> Any:
    out = cli(*args, "--json")
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def test_every_tool_is_listed(engine, settings):
    async def go() -> tuple[list[str], list[str]]:
        async with Client(build_server(engine, settings)) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            resources = [str(r.uri) for r in (await client.list_resources()).resources]
            return tools, resources

    tools, resources = asyncio.run(go())
    assert tools == list(TOOLS)
    assert resources == ["gpu-tracker://providers", "gpu-tracker://cards", "gpu-tracker://api-prices"]


def test_cheapest_fine_tune_matches_the_cli(cli, engine, settings, seeded):
    job = {"model": "llama-3.1-8b", "method": "qlora", "tokens": "20M"}
    mcp = _ok(engine, settings, "cheapest", {"request": {**job, "limit": 15}})
    rows = _cli_json(cli, "cheapest", "--model", "llama-3.1-8b", "--method", "qlora", "--tokens", "20M", "--top", "15")
    assert len(rows) == 15 and mcp["rows"][0]["cost_per_run"] > 0
    assert _steady(mcp["rows"]) == _steady(rows)


def test_cheapest_serving_matches_the_cli_and_carries_the_apis(cli, engine, settings, seeded):
    job = {
        "kind": "inference",
        "model": "llama-3.1-70b",
        "precision": "fp8",
        "prompt_tokens": 1000,
        "output_tokens": 200,
    }
    mcp = _ok(engine, settings, "cheapest", {"request": {**job, "limit": 10}})
    rows = _cli_json(
        cli,
        "cheapest",
        "--kind",
        "inference",
        "--model",
        "llama-3.1-70b",
        "--precision",
        "fp8",
        "--prompt-tokens",
        "1000",
        "--output-tokens",
        "200",
        "--top",
        "10",
    )
    assert _steady(mcp["rows"]) == _steady(rows)
    apis = mcp["api_alternatives"]
    assert apis["model"] == "llama-3.1-70b" and apis["apis"], apis
    cheapest = apis["cheapest_api"]
    # The blended price: output price plus the prompt's input tokens per output token.
    assert cheapest["usd_per_mtok"] == pytest.approx(
        cheapest["output_usd_per_mtok"] + cheapest["input_usd_per_mtok"] * 1000 / 200, abs=1e-6
    )
    priced = [r for r in rows if r["fits"] and r["usd_per_mtok"] is not None]
    steady = [r for r in priced if r["pricing"] == "on_demand"] or priced
    best = min(steady, key=lambda r: r["usd_per_mtok"])
    assert apis["self_hosted"]["usd_per_mtok"] == best["usd_per_mtok"]


def test_estimate_matches_the_cli(cli, engine, settings):
    mcp = _ok(
        engine,
        settings,
        "estimate",
        {"request": {"model": "llama-3.1-8b", "tokens": "20M", "gpu": "H100", "price": "2.50"}},
    )
    out = _cli_json(cli, "estimate", "--model", "llama-3.1-8b", "--tokens", "20M", "--gpu", "H100", "--price", "2.50")
    assert mcp["rows"] and mcp == out


def test_market_matches_the_api(engine, settings, seeded):
    mcp = _ok(engine, settings, "market", {"gpu": "H100", "pricing": ["on_demand"]})
    with TestClient(create_app(settings, engine)) as client:
        api = client.get("/v1/market", params={"gpu": "H100", "pricing": "on_demand"}).json()
    assert mcp["cards"] and _steady(mcp) == _steady(api)


def test_history_matches_the_cli(cli, engine, settings, seeded, monkeypatch):
    # Today's bucket weighs each open price up to now: both shells answer for the same instant (else a
    # quantile on a weight boundary moves between the two calls).
    now = utcnow()
    monkeypatch.setattr("tracker.clock.utcnow", lambda: now)
    monkeypatch.setattr("api.mcp.server.utcnow", lambda: now)
    mcp = _ok(engine, settings, "history", {"gpu": "H100", "days": 7, "interval": "1d"})
    rows = _cli_json(cli, "history", "H100", "--days", "7", "--interval", "1d")
    assert mcp["buckets"] and mcp["buckets"] == rows


def test_availability_matches_the_cli(cli, engine, settings, seeded, monkeypatch):
    # Shares and "last available" are measured up to now: both shells answer for the same instant.
    now = utcnow()
    monkeypatch.setattr("tracker.clock.utcnow", lambda: now)
    monkeypatch.setattr("api.mcp.server.utcnow", lambda: now)
    mcp = _ok(engine, settings, "availability", {"gpu": "RTX 4090", "days": 7})
    out = _cli_json(cli, "availability", "RTX 4090", "--days", "7")
    assert mcp["rows"] and _steady(mcp["rows"]) == _steady(out["rows"])


def test_plan_matches_the_cli(cli, engine, settings, seeded):
    path = EXAMPLES / "minimal.yaml"
    mcp = _ok(engine, settings, "plan", {"request": {"source": path.read_text()}})
    out = _cli_json(cli, "plan", str(path))
    assert mcp["workloads"] and _steady(mcp) == _steady(out)


def test_alerts_list_matches_the_cli(cli, engine, settings, seeded):
    mcp = _ok(engine, settings, "alerts_list", {})
    rows = _cli_json(cli, "alerts", "list")
    assert mcp["count"] == 1 and mcp["alerts"] == rows


def _text(contents: Any) -> str:
    assert hasattr(contents, "text"), contents  # a text resource, not a blob
    return str(contents.text)


def _tool_error(result: Any) -> dict[str, Any]:
    assert result.is_error
    text = result.content[0].text
    prefix, _, body = text.partition(": ")
    assert prefix.startswith("Error executing tool")
    parsed: dict[str, Any] = json.loads(body)
    return parsed


def test_errors_are_the_api_bodies(engine, settings, seeded):
    with TestClient(create_app(settings, engine)) as client:
        cases: list[tuple[str, dict[str, Any], Any]] = [
            (
                "cheapest",
                {"request": {"model": "llama-9-900b", "tokens": "1M"}},
                client.post("/v1/rank", json={"model": "llama-9-900b", "tokens": "1M"}),
            ),
            ("market", {"gpu": "H1000"}, client.get("/v1/market", params={"gpu": "H1000"})),
            ("history", {"gpu": "B900"}, client.get("/v1/market/history", params={"gpu": "B900"})),
            (
                "estimate",
                {"request": {"model": "llama-3.1-8b", "tokens": "1M", "gpu": "Z80"}},
                client.post("/v1/estimate", json={"model": "llama-3.1-8b", "tokens": "1M", "gpu": "Z80"}),
            ),
        ]
        for tool, arguments, api in cases:
            assert api.status_code in (404, 422), api.text
            assert _tool_error(_call(engine, settings, tool, arguments)) == api.json(), tool


def test_bad_arguments_are_the_apis_422(engine, settings):
    """Arguments the schema refuses (before any tool runs) come back as the API's 422: the same field, the
    same messages, for a body (`request`) and for query-like arguments alike."""
    with TestClient(create_app(settings, engine)) as client:
        cases: list[tuple[str, dict[str, Any], Any]] = [
            (
                "cheapest",
                {"request": {"model": "llama-3.1-8b", "tokens": "1M", "limit": 0}},
                client.post("/v1/rank", json={"model": "llama-3.1-8b", "tokens": "1M", "limit": 0}),
            ),
            (
                "cheapest",
                {"request": {"model": "llama-3.1-8b", "tokens": "1M", "surprise": 1}},
                client.post("/v1/rank", json={"model": "llama-3.1-8b", "tokens": "1M", "surprise": 1}),
            ),
            (
                "availability",
                {"gpu": "H100", "days": 0},
                client.get("/v1/availability", params={"gpu": "H100", "days": 0}),
            ),
            ("market", {"aggregated": "sometimes"}, client.get("/v1/market", params={"aggregated": "sometimes"})),
        ]
        for tool, arguments, api in cases:
            assert api.status_code == 422, api.text
            mine, theirs = _tool_error(_call(engine, settings, tool, arguments)), api.json()
            assert mine["field"] == theirs["field"], (tool, mine, theirs)
            assert [d["msg"] for d in mine["detail"]] == [d["msg"] for d in theirs["detail"]], (tool, mine, theirs)


def test_a_bad_mix_names_the_field_like_the_api(engine, settings):
    source = "workloads:\n  - name: x\n    kind: fine-tune\n    job: {model: llama-3.1-8b, tokens: -5}\n"
    with TestClient(create_app(settings, engine)) as client:
        api = client.post("/v1/plan", json={"source": source})
    assert api.status_code == 422
    assert _tool_error(_call(engine, settings, "plan", {"request": {"source": source}})) == api.json()


def test_resources_are_the_catalog_and_the_price_sheet(engine, settings):
    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(build_server(engine, settings)) as client:
            cards = json.loads(_text((await client.read_resource("gpu-tracker://cards")).contents[0]))
            prices = json.loads(_text((await client.read_resource("gpu-tracker://api-prices")).contents[0]))
            return cards, prices

    cards, prices = asyncio.run(go())
    assert cards["count"] == len(get_catalog().all())
    assert {p["provider"] for p in prices["prices"]} >= {"deepinfra", "fireworks"}
    assert all(p["source_url"].startswith("https://") for p in prices["prices"])


async def _over_http(app: Any, token: str | None, tool: str, arguments: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1:8001", headers=headers
    )
    async with http, Client(streamable_http_client("http://127.0.0.1:8001/mcp", http_client=http)) as client:
        return await client.call_tool(tool, arguments)


def test_streamable_http_behind_the_token(engine, settings, seeded):
    guarded = settings.model_copy(update={"api_token": SecretStr("s3cret")})
    server = build_server(engine, guarded)
    app = http_app(server, guarded)
    arguments = {"request": {"model": "llama-3.1-8b", "method": "qlora", "tokens": "20M", "limit": 5}}

    async def go() -> tuple[Any, int, int]:
        async with server.session_manager.run():
            result = await _over_http(app, "s3cret", "cheapest", arguments)
            probe = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1:8001")
            async with probe:
                missing = (await probe.post("/mcp", json={})).status_code
                wrong = (await probe.post("/mcp", json={}, headers={"Authorization": "Bearer nope"})).status_code
            return result, missing, wrong

    result, missing, wrong = asyncio.run(go())
    assert (missing, wrong) == (401, 401)
    assert not result.is_error
    local = _ok(engine, settings, "cheapest", arguments)
    assert _steady(result.structured_content["rows"]) == _steady(local["rows"])


def test_http_without_a_configured_token_is_refused(engine, settings):
    app = http_app(build_server(engine, settings), settings)  # settings carry no api_token

    async def go() -> tuple[int, str]:
        probe = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1:8001")
        async with probe:
            resp = await probe.post("/mcp", json={}, headers={"Authorization": "Bearer anything"})
            return resp.status_code, resp.json()["detail"]

    status, detail = asyncio.run(go())
    assert status == 403 and "TRACKER_API_TOKEN" in detail


def test_cli_http_needs_the_token(cli, monkeypatch):
    monkeypatch.delenv("TRACKER_API_TOKEN", raising=False)
    out = cli("mcp", "--http")
    assert out.exit_code != 0 and "TRACKER_API_TOKEN" in out.output
    assert len(out.output.strip().splitlines()) == 1


def test_gpu_tracker_mcp_over_stdio(engine, settings, seeded, tmp_path):
    """`gpu-tracker mcp` as an assistant launches it: a subprocess speaking MCP on stdin/stdout."""
    import os
    import sys

    from mcp.client.stdio import StdioServerParameters

    url = engine.url.render_as_string(hide_password=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")} | {"TRACKER_DATA_DIR": str(tmp_path)}
    args = ["-c", "from tracker.cli import main; main()", "--database-url", url, "mcp"]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    arguments = {"gpu": "H100", "pricing": ["on_demand"]}

    async def go() -> Any:
        async with Client(params, read_timeout_seconds=120) as client:
            return await client.call_tool("market", arguments)

    result = asyncio.run(go())
    assert not result.is_error, result.content
    assert _steady(result.structured_content) == _steady(_ok(engine, settings, "market", arguments))
