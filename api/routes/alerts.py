"""/v1/alerts: alert rule CRUD, a rule's events and deliveries, and test notifications.

Every endpoint needs the bearer token, reads included: rules hold channel URLs, and those carry
secrets (Slack and Telegram tokens live in the URL). A webhook's signing secret is shown once, in the
response that created it. Bad input is a 422 whose body names the field. Every write is committed
before its answer is sent (api.deps.DbSession): a 2xx means the change is there for the next request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, status
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response
from sqlalchemy import select
from sqlalchemy.orm.exc import StaleDataError

from api.auth import require_token
from api.cached import answer
from api.deps import Clock, DbSession, Now
from tracker.alerts.deliver import Deliverer, send_test
from tracker.alerts.history import events, notifications
from tracker.alerts.job_cost import default_cost_model
from tracker.alerts.models import RuleCreate, RuleEvents, RuleList, RulePatch, RuleRead, TestSent
from tracker.alerts.rules import RuleError, create_rule, rule_dict, update_rule
from tracker.storage.alert_tables import AlertRule

router = APIRouter(prefix="/v1", tags=["alerts"], dependencies=[Depends(require_token)])

RuleId = Annotated[int, PathParam(ge=1, le=2**62, description="Alert rule id")]


def _error(exc: RuleError) -> JSONResponse:
    return JSONResponse(status_code=422, content={"detail": str(exc), "field": exc.field})


def _missing(rule_id: RuleId) -> JSONResponse:
    return JSONResponse(status_code=404, content={"detail": f"no alert rule {rule_id}", "field": "id"})


@router.get("/alerts", response_model=RuleList)
def list_alerts(session: DbSession) -> Response:
    rows = [rule_dict(r) for r in session.scalars(select(AlertRule).order_by(AlertRule.id))]
    return answer({"alerts": rows, "count": len(rows)})


@router.post("/alerts", status_code=status.HTTP_201_CREATED, response_model=RuleRead)
def create_alert(body: RuleCreate, request: Request, session: DbSession, now: Now) -> Response:
    """Create a rule. A rule whose condition already holds is refused (422, field threshold) unless
    `allow_immediate` is true. The response carries webhook signing secrets; later reads redact them."""
    try:
        rule = create_rule(
            session,
            body.rule_input(),
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
def patch_alert(rule_id: RuleId, body: RulePatch, request: Request, session: DbSession, now: Now) -> Response:
    """Change thresholds, timing, channels, enabled or silence. The subject and metric are fixed."""
    rule = session.get(AlertRule, rule_id, with_for_update=True)
    if rule is None:
        return _missing(rule_id)
    try:
        changes = body.changes()
    except RuleError as exc:
        return _error(exc)
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
    return answer(
        {
            "rule_id": rule_id,
            "events": events(session, rule_id, limit=limit),
            "notifications": notifications(session, rule_id, limit=limit),
        }
    )


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
