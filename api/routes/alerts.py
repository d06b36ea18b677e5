"""/v1/alerts: alert rule CRUD, a rule's events and deliveries, and test notifications.

Every endpoint needs the bearer token, reads included: rules hold channel URLs, and those carry
secrets (Slack and Telegram tokens live in the URL). A webhook's signing secret is shown once, in the
response that created it. Bad input is a 422 whose body names the field. Every write is committed
before its answer is sent (api.deps.DbSession): a 2xx means the change is there for the next request.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, status
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm.exc import StaleDataError

from api.auth import require_token
from api.cached import answer
from api.deps import Clock, DbSession, Now
from tracker.alerts.deliver import Deliverer, send_test
from tracker.alerts.history import events, notifications
from tracker.alerts.job_cost import default_cost_model
from tracker.alerts.models import RuleEvents, RuleList, RuleRead, TestSent
from tracker.alerts.rules import ChannelInput, RuleError, RuleInput, create_rule, rule_dict, update_rule
from tracker.storage.alert_tables import AlertRule

router = APIRouter(prefix="/v1", tags=["alerts"], dependencies=[Depends(require_token)])

# usd_per_mtoken: the earlier name of usd_per_mtok, still accepted
Metric = Literal["min", "p25", "median", "cost_per_run", "usd_per_mtok", "usd_per_mtoken"]
Duration = Annotated[str | int, Field(description="Seconds, or 15m / 4h / 1d")]
RuleId = Annotated[int, PathParam(ge=1, le=2**62, description="Alert rule id")]


class ChannelBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["webhook", "apprise"]
    url: str = Field(..., min_length=1, max_length=2000)
    secret: str | None = Field(None, max_length=128, description="webhook only: whsec_<base64>; generated if absent")


class AlertBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str | None = Field(None, max_length=200)
    gpu: str = Field(..., min_length=1, max_length=100, description="Card id, family or alias")
    pricing: Literal["on_demand", "spot", "reserved"] = "on_demand"
    metric: Metric = "min"
    condition: Literal["below", "above"]
    threshold: Decimal = Field(..., gt=0, lt=Decimal("1e8"))
    recovery_threshold: Decimal | None = Field(None, gt=0, lt=Decimal("1e8"))
    for_: Duration = Field(0, alias="for")
    repeat: Duration | None = None
    providers: list[Annotated[str, Field(max_length=64)]] | None = Field(None, max_length=100)
    regions: list[Annotated[str, Field(max_length=128)]] | None = Field(None, max_length=100)
    min_offers: int = Field(1, ge=1, le=10_000)
    # Offer filters (fixed once saved, like the card): only matching offers count, and none matching
    # resolves a `below` rule. What each means for offers without the attribute: tracker.market.quality.
    available_only: bool = Field(False, description="Only offers the provider says are available")
    min_gpus: Decimal | None = Field(None, gt=0, le=1024, description="Only offers with at least this many GPUs")
    verified_only: bool = Field(False, description="Only verified machines (stated, or a cloud's own)")
    datacenter_only: bool = Field(False, description="Only datacenter machines (stated, or a cloud's own)")
    min_reliability: Decimal | None = Field(None, ge=0, le=1, description="Host reliability score, 0-1")
    cloud: Literal["secure", "community"] | None = None
    price_statistic: Literal["min", "p25", "median"] = "min"
    job: dict[str, Any] | None = None
    job_gpus: Decimal = Field(Decimal(1), gt=0, le=64)
    channels: list[ChannelBody] = Field(default_factory=list, max_length=20)
    enabled: bool = True
    silenced_until: AwareDatetime | None = None
    allow_immediate: bool = Field(False, description="Accept a rule whose condition already holds")


class AlertPatch(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str | None = Field(None, max_length=200)
    threshold: Decimal | None = Field(None, gt=0, lt=Decimal("1e8"))
    recovery_threshold: Decimal | None = Field(None, gt=0, lt=Decimal("1e8"))
    for_: Duration | None = Field(None, alias="for")
    repeat: Duration | None = None
    enabled: bool | None = None
    silenced_until: AwareDatetime | None = None
    min_offers: int | None = Field(None, ge=1, le=10_000)
    channels: list[ChannelBody] | None = Field(None, max_length=20)


def _error(exc: RuleError) -> JSONResponse:
    return JSONResponse(status_code=422, content={"detail": str(exc), "field": exc.field})


def _missing(rule_id: RuleId) -> JSONResponse:
    return JSONResponse(status_code=404, content={"detail": f"no alert rule {rule_id}", "field": "id"})


def _channels(bodies: list[ChannelBody]) -> list[ChannelInput]:
    return [ChannelInput(c.type, c.url, c.secret) for c in bodies]


@router.get("/alerts", response_model=RuleList)
def list_alerts(session: DbSession) -> Response:
    rows = [rule_dict(r) for r in session.scalars(select(AlertRule).order_by(AlertRule.id))]
    return answer({"alerts": rows, "count": len(rows)})


@router.post("/alerts", status_code=status.HTTP_201_CREATED, response_model=RuleRead)
def create_alert(body: AlertBody, request: Request, session: DbSession, now: Now) -> Response:
    """Create a rule. A rule whose condition already holds is refused (422, field threshold) unless
    `allow_immediate` is true. The response carries webhook signing secrets; later reads redact them."""
    inp = RuleInput(
        gpu=body.gpu,
        condition=body.condition,
        threshold=body.threshold,
        pricing=body.pricing,
        metric=body.metric,
        recovery_threshold=body.recovery_threshold,
        for_=body.for_,
        repeat=body.repeat,
        providers=body.providers,
        regions=body.regions,
        min_offers=body.min_offers,
        available_only=body.available_only,
        min_gpus=body.min_gpus,
        verified_only=body.verified_only,
        datacenter_only=body.datacenter_only,
        min_reliability=body.min_reliability,
        cloud=body.cloud,
        price_statistic=body.price_statistic,
        job=body.job,
        job_gpus=body.job_gpus,
        channels=_channels(body.channels),
        name=body.name,
        enabled=body.enabled,
        silenced_until=body.silenced_until,
        allow_immediate=body.allow_immediate,
    )
    try:
        rule = create_rule(
            session,
            inp,
            now=now,
            settings=request.app.state.settings,
            cost_model=default_cost_model(),
        )
    except RuleError as exc:
        return _error(exc)
    return answer(rule_dict(rule, reveal=True), status.HTTP_201_CREATED)


@router.get("/alerts/{rule_id}", response_model=RuleRead)
def get_alert(rule_id: RuleId, session: DbSession) -> Response:
    rule = session.get(AlertRule, rule_id)
    return answer(rule_dict(rule)) if rule else _missing(rule_id)


@router.patch("/alerts/{rule_id}", response_model=RuleRead)
def patch_alert(rule_id: RuleId, body: AlertPatch, request: Request, session: DbSession, now: Now) -> Response:
    """Change thresholds, timing, channels, enabled or silence. The subject and metric are fixed."""
    rule = session.get(AlertRule, rule_id, with_for_update=True)
    if rule is None:
        return _missing(rule_id)
    changes: dict[str, Any] = {}
    for name in body.model_fields_set:
        key = "for" if name == "for_" else name
        value = getattr(body, name)
        if key in ("name", "threshold", "enabled", "min_offers") and value is None:
            return JSONResponse(status_code=422, content={"detail": f"{key} cannot be null", "field": key})
        changes[key] = _channels(value) if key == "channels" and value is not None else value
    try:
        update_rule(session, rule, changes, now=now, settings=request.app.state.settings)
    except RuleError as exc:
        return _error(exc)
    except StaleDataError:
        return JSONResponse(status_code=409, content={"detail": "the rule changed meanwhile; retry", "field": "id"})
    return answer(rule_dict(rule))


@router.delete("/alerts/{rule_id}", status_code=status.HTTP_204_NO_CONTENT, response_model=None)
def delete_alert(rule_id: RuleId, session: DbSession) -> Response:
    rule = session.get(AlertRule, rule_id)
    if rule is None:
        return _missing(rule_id)
    session.delete(rule)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/alerts/{rule_id}/events", response_model=RuleEvents)
def alert_events(
    rule_id: RuleId,
    session: DbSession,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    """Transitions (newest first, with the value that caused each) and notifications with their attempts."""
    if session.get(AlertRule, rule_id) is None:
        return _missing(rule_id)
    return answer({
        "rule_id": rule_id,
        "events": events(session, rule_id, limit=limit),
        "notifications": notifications(session, rule_id, limit=limit),
    })  # fmt: skip


@router.post("/alerts/{rule_id}/test", response_model=TestSent)
def test_alert(rule_id: RuleId, request: Request, clock: Clock) -> Response:
    """Send a test notification to every channel now (one attempt each, recorded like any delivery)."""
    engine = request.app.state.engine
    try:
        results = send_test(engine, rule_id, Deliverer(engine, request.app.state.settings))
    except LookupError:
        return _missing(rule_id)
    if not results:
        return JSONResponse(status_code=422, content={"detail": "the rule has no channels", "field": "channels"})
    return answer({"rule_id": rule_id, "sent_at": clock(), "results": results})
