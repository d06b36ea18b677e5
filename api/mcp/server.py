"""Tools and resources of the MCP server, each a thin shell over the service the API route calls.

Answers are the API's JSON (encoded by api.cached.encode, so Decimals are numbers exactly as the API
and `--json` print them). A bad input is a tool error whose text is the API's error body: the same
`detail`, the same `field`, the same suggestions, after the SDK's "Error executing tool NAME: " prefix.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import timedelta
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError
from sqlalchemy import Engine, select
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from api.cached import encode
from api.limits import bounded_errors
from api.routes.market import MAX_BUCKETS
from api.routes.plan import PlanBody
from api.routes.rank import RankBody, _filters, _job
from api.validation import FieldError, validation_body
from providers.contract import Pricing
from tracker import __version__
from tracker.alerts.rules import rule_dict
from tracker.catalog.gpus import AmbiguousGpuName, GpuNameError, UnknownGpuName, get_catalog
from tracker.clock import utcnow
from tracker.config import Settings
from tracker.estimate import EstimateError
from tracker.estimate.service import EstimateRequest, run_estimate
from tracker.inference_apis.sheets import load_sheet
from tracker.market.availability import availability
from tracker.market.filters import OfferFilters
from tracker.market.offers import gpu_ids_for
from tracker.market.rank import RankOptions
from tracker.market.service import market_history, market_snapshot, rank_offers
from tracker.market.statistics import INTERVALS, TermError, commitment
from tracker.ops.status import provider_status
from tracker.plan.service import options_for, plan_live
from tracker.storage.alert_tables import AlertRule
from tracker.storage.engine import session_scope

INSTRUCTIONS = (
    "Live GPU cloud prices and what a job costs on them. `cheapest` ranks live offers for a fine-tuning or "
    "serving job (kind: inference adds the serverless API prices and the break-even volume); `estimate` is "
    "the throughput/memory/cost model per card; `market` and `history` the $/GPU-hour distribution now and "
    "over time; `availability` when a card was last available; `plan` places a workload mix; "
    "`alerts_list` the alert rules. Resources: providers (scrape health), cards (the GPU catalog), "
    "api-prices (the serverless price sheet)."
)
_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def _error_body(exc: Exception) -> dict[str, Any] | None:
    """The API's error body for an input error (api.errors), or None for anything else."""
    if isinstance(exc, FieldError):
        return {"detail": exc.message, "field": exc.field}
    if isinstance(exc, UnknownGpuName):
        return {"detail": str(exc), "field": "gpu", "suggestions": list(getattr(exc, "suggestions", []))}
    if isinstance(exc, AmbiguousGpuName):
        return {"detail": str(exc), "field": "gpu", "candidates": list(getattr(exc, "candidates", []))}
    if isinstance(exc, GpuNameError):
        return {"detail": str(exc), "field": "gpu"}
    if isinstance(exc, EstimateError):
        body: dict[str, Any] = {"detail": exc.message, "field": exc.field}
        if suggestions := getattr(exc, "suggestions", None):
            body["suggestions"] = list(suggestions)
        return body
    if isinstance(exc, OperationalError):
        return {"detail": "database unavailable"}
    if isinstance(exc, SQLAlchemyError):
        return {"detail": "database error"}
    if isinstance(exc, ValueError):  # a filter out of range (tracker.market.quality, tracker.market.aggregated)
        return {"detail": str(exc), "field": None}
    return None


@contextmanager
def _as_tool_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        body = _error_body(exc)
        if body is None:
            raise
        raise ToolError(json.dumps(body, ensure_ascii=False)) from None


def _json(content: Any) -> dict[str, Any]:
    """The API's JSON for `content`, as the structured result."""
    out: dict[str, Any] = json.loads(encode(content))
    return out


GpuName = Annotated[str, Field(min_length=1, max_length=100, description='Card, family or alias, e.g. "H100".')]
Names = Annotated[list[Annotated[str, Field(max_length=128)]] | None, Field(max_length=100)]


class Tools:
    """The tools, bound to one engine and settings (like the API app's state)."""

    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.engine, self.settings = engine, settings

    def cheapest(self, request: RankBody) -> dict[str, Any]:
        """Live offers ranked by what this job would cost on them (POST /v1/rank; `gpu-tracker cheapest`).
        A fine-tuning job (kind: fine_tune) is priced for the whole run; a serving job (kind: inference) per
        month of its load, with `api_alternatives`: serverless API prices and the break-even volume."""
        now = utcnow()
        with _as_tool_errors():
            prepared, plan = _job(request)
            filters = _filters(request)
            options = RankOptions(
                sort_by=request.sort_by,
                include_unfit=request.include_unfit,
                best_per_card=request.best_per_card,
                limit=request.limit,
                gpu_only=request.gpu_only,
            )
            max_age = timedelta(hours=request.max_age_hours) if request.max_age_hours else None
            with session_scope(self.engine) as session:
                result = rank_offers(
                    self.engine, session, self.settings, now, prepared, filters, options, max_age, plan
                )
        return _json(result)

    def estimate(self, request: EstimateRequest) -> dict[str, Any]:
        """Throughput, memory per GPU, hours and cost of a job per card, with its uncertainty band
        (POST /v1/estimate; `gpu-tracker estimate`). No market data: give `price` for a cost."""
        with _as_tool_errors():
            return _json(run_estimate(request))

    def market(
        self,
        gpu: Annotated[str | None, Field(max_length=100, description="Card, family or alias; all if omitted.")] = None,
        pricing: list[Pricing] | None = None,
        include_reference: bool = True,
        max_age_hours: Annotated[float | None, Field(gt=0, le=24 * 365)] = None,
        aggregated: Literal["include", "exclude", "dedupe"] = "include",
    ) -> dict[str, Any]:
        """$/GPU-hour per card and pricing type now: min, p25, median, p75, max, offers, providers,
        freshness (GET /v1/market)."""
        now = utcnow()
        with _as_tool_errors():
            ids = gpu_ids_for(gpu) if gpu else None
            max_age = timedelta(hours=max_age_hours) if max_age_hours else None
            with session_scope(self.engine) as session:
                return _json(
                    market_snapshot(
                        self.engine,
                        session,
                        self.settings,
                        now,
                        gpu_ids=ids,
                        pricing=[p.value for p in pricing or []],
                        include_reference=include_reference,
                        max_age=max_age,
                        aggregated=aggregated,
                    )
                )

    def history(
        self,
        gpu: GpuName,
        pricing: Pricing = Pricing.on_demand,
        interval: Literal["1h", "1d", "1w"] = "1d",
        days: Annotated[int, Field(ge=1, le=3650)] = 30,
        include_reference: bool = True,
        term: Annotated[str | None, Field(max_length=16)] = None,
    ) -> dict[str, Any]:
        """Min / p25 / median / p75 / max of $/GPU-hour per bucket over the last `days`, exact from the
        price history (GET /v1/market/history; `gpu-tracker history`); pricing=reserved needs its `term`
        (1d, 7d, 1mo, 3mo, 1y, 3y)."""
        now = utcnow()
        start = now - timedelta(days=days)
        with _as_tool_errors():
            if (now - start) / INTERVALS[interval] > MAX_BUCKETS:
                raise FieldError(f"too many buckets: use a coarser interval than {interval} for this range", "interval")
            ids = gpu_ids_for(gpu)
            try:
                reserved_term = commitment(pricing.value, term)
            except TermError as exc:
                raise FieldError(str(exc), exc.field) from None
            with session_scope(self.engine) as session:
                rows = market_history(
                    session,
                    self.settings,
                    now,
                    gpu_ids=ids,
                    pricing=pricing.value,
                    reserved_term=reserved_term,
                    interval=interval,
                    start=start,
                    end=now,
                    include_reference=include_reference,
                )
        return _json(
            {
                "gpu": gpu,
                "gpu_ids": ids,
                "pricing": pricing.value,
                "reserved_term": reserved_term,
                "interval": interval,
                "start": start,
                "end": now,
                "buckets": rows,
            }
        )

    def availability(
        self,
        gpu: GpuName,
        filters: OfferFilters | None = None,
        days: Annotated[int, Field(ge=1, le=365)] = 7,
    ) -> dict[str, Any]:
        """Per provider and card: offers live and available now, the last time one was available, and the
        share of the last `days` during which one was (GET /v1/availability; `gpu-tracker availability`).
        `filters` are the API's offer filters (providers, regions, pricing, min_gpus, ...)."""
        now = utcnow()
        chosen = filters or OfferFilters()
        with _as_tool_errors():
            ids = gpu_ids_for(gpu)
            with session_scope(self.engine) as session:
                rows = availability(session, self.settings, now, gpu_ids=ids, days=days, filters=chosen)
        return _json(
            {
                "as_of": now,
                "gpu": gpu,
                "gpu_ids": ids,
                "filters": chosen.model_dump(mode="json"),
                "days": days,
                "rows": rows,
            }
        )

    def plan(self, request: PlanBody) -> dict[str, Any]:
        """A workload mix (fine-tuning and serving workloads) placed on the live offers that run each
        month cheapest; the fleet, one card type beside it, and power (POST /v1/plan; `gpu-tracker plan`)."""
        now = utcnow()
        with _as_tool_errors():
            mix = request.mix()
            options = options_for(mix, request.power_budget_kw, request.overhead_factor)
            with session_scope(self.engine) as session:
                return _json(plan_live(self.engine, session, self.settings, now, mix, options))

    def alerts_list(self) -> dict[str, Any]:
        """Every alert rule with its state, last value and channels (GET /v1/alerts; `gpu-tracker alerts list`)."""
        with _as_tool_errors(), session_scope(self.engine) as session:
            rows = [rule_dict(r) for r in session.scalars(select(AlertRule).order_by(AlertRule.id))]
        return _json({"alerts": rows, "count": len(rows)})


# Tool name → method of Tools. The market-intelligence tools (`terms`, `index`) come with that feature.
TOOLS: tuple[str, ...] = ("cheapest", "estimate", "market", "history", "availability", "plan", "alerts_list")


def _resources(server: MCPServer, engine: Engine, settings: Settings) -> None:
    def providers() -> str:
        return encode({"providers": provider_status(engine, settings)}).decode()

    def cards() -> str:
        specs = get_catalog().all()
        return encode({"gpus": [asdict(s) for s in specs], "count": len(specs)}).decode()

    def api_prices() -> str:
        sheet = load_sheet()
        now = utcnow()
        return encode(
            {
                "read_on": sheet.read_on,
                "age_days": sheet.age_days(now),
                "stale": sheet.stale(now),
                "prices": [p.describe() for p in sheet.prices],
            }
        ).decode()

    specs: tuple[tuple[str, str, Callable[[], str]], ...] = (
        ("providers", "Each provider's scrape health: last run, last success, age, offers, stale flag.", providers),
        ("cards", "The GPU catalog: every card's memory, FLOPs, bandwidth, interconnect.", cards),
        ("api-prices", "Serverless inference API prices per model ($/Mtok, source URL, date read).", api_prices),
    )
    for name, description, fn in specs:
        server.resource(f"gpu-tracker://{name}", name=name, description=description, mime_type="application/json")(fn)


def _api_locations(errors: list[Any]) -> list[dict[str, Any]]:
    """Argument errors located as the API locates them: a `request` argument is the request body, any
    other argument a query parameter (so `field` comes out as the API's: "tokens", "limit", "gpu")."""
    located = []
    for error in errors:
        loc = tuple(error.get("loc", ()))
        where = ("body", *loc[1:]) if loc[:1] == ("request",) else ("query", *loc)
        located.append({k: v for k, v in error.items() if k != "url"} | {"loc": where})
    return located


class TrackerServer(MCPServer[Any]):
    """The SDK's server, with bad arguments reported in the API's 422 body instead of pydantic's text."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            body = bounded_errors(validation_body, _api_locations(exc.__cause__.errors(include_url=False)))
            raise ToolError(f"Error executing tool {name}: {encode(body).decode()}") from None


def build_server(engine: Engine, settings: Settings) -> MCPServer:
    """The MCP server over this database: every tool in TOOLS, the read-only resources."""
    # WARNING: the SDK logs every tool error at INFO; over stdio its log is the assistant's stderr.
    server = TrackerServer(name="gpu-tracker", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    tools = Tools(engine, settings)
    for name in TOOLS:
        server.add_tool(getattr(tools, name), name=name, annotations=_READ_ONLY)
    _resources(server, engine, settings)
    return server
