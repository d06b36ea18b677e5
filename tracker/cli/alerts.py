"""`gpu-tracker alerts add|list|show|rm|test|silence`: price alert rules and their history."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table
from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.alerts.deliver import Deliverer, send_test
from tracker.alerts.history import events, notifications
from tracker.alerts.job_cost import default_cost_model
from tracker.alerts.models import RULE_FILTERS
from tracker.alerts.rules import ChannelInput, RuleError, RuleInput, create_rule, parse_duration, rule_dict, update_rule
from tracker.cli.context import Runtime, check_providers, runtime
from tracker.cli.filter_options import with_filters
from tracker.cli.output import console, emit_json, fail, show_table
from tracker.clock import utcnow
from tracker.market.filters import OfferFilters
from tracker.storage.alert_tables import AlertRule
from tracker.storage.engine import session_scope

alerts_app = typer.Typer(
    add_completion=False, help="Price alerts: fire once, resolve once, never lost.", no_args_is_help=True
)


# The rule schema's fields as this command's flags: an error names what the user typed, not the API's field.
_FLAGS = {
    "allow_immediate": "--allow-firing-now",
    "providers": "--provider",
    "regions": "--region",
    "for_s": "--for",
    "repeat_s": "--repeat",
    "recovery_threshold": "--recovery",
    "job_gpus": "--job-gpus",
    "price_statistic": "--price-statistic",
    "min_offers": "--min-offers",
    "min_gpus": "--min-gpus",
    "min_reliability": "--min-reliability",
    "channels": "--webhook/--apprise",
}


def _cli_words(exc: RuleError) -> str:
    field = exc.field or ""
    if field == "plan" or field.startswith("plan."):
        return f"--plan: {str(exc).removeprefix('plan: ')}"
    flag = _FLAGS.get(field) or (
        "--below/--above"
        if field == "threshold"
        else "--webhook/--apprise"
        if field.startswith("channels")
        else f"--{field.replace('_', '-')}"
    )
    message = str(exc).replace("set allow_immediate", "pass allow_immediate")
    for name, option in _FLAGS.items():
        message = re.sub(rf"\b{name}\b", option, message)
    return f"{flag}: {message}"


def _runtime(ctx: typer.Context) -> Runtime:
    try:
        return runtime(ctx)
    except ValidationError as exc:
        fail(f"bad alert configuration: {exc.errors()[0]['msg']}")


@alerts_app.command("add")
@with_filters(exclude=[f for f in OfferFilters.model_fields if f not in RULE_FILTERS])
def add(
    ctx: typer.Context,
    filters: OfferFilters,
    gpu: str | None = typer.Option(None, "--gpu", help='Card id, family or alias, e.g. "H100-SXM-80GB" or "H100".'),
    plan: Path | None = typer.Option(
        None, "--plan", help="Instead of --gpu: a workload mix file (as `plan` reads), re-planned on every ingest."
    ),
    below: str | None = typer.Option(None, "--below", help="Fire when the metric drops below this."),
    above: str | None = typer.Option(None, "--above", help="Fire when the metric rises above this."),
    recovery: str | None = typer.Option(None, "--recovery", help="Resolve only past this (hysteresis)."),
    metric: str | None = typer.Option(
        None,
        "--metric",
        help="min | p25 | median | cost_per_run | usd_per_mtok; with --plan: plan_monthly_cost | plan_best_card",
    ),
    pricing: str = typer.Option("on_demand", "--pricing", help="on_demand | spot | reserved"),
    term: str | None = typer.Option(None, "--term", help="The reservation term of --pricing reserved: 1d ... 3y."),
    for_: str = typer.Option("0", "--for", help="Pending period before firing, e.g. 15m."),
    repeat: str | None = typer.Option(None, "--repeat", help="Remind while firing, e.g. 4h."),
    min_offers: int = typer.Option(1, "--min-offers", help="Fewer fresh offers than this is no_data."),
    webhook: list[str] = typer.Option(None, "--webhook", help="Webhook URL (repeatable), signed."),
    webhook_secret: str | None = typer.Option(None, "--webhook-secret", help="whsec_… (default: generated)."),
    apprise_url: list[str] = typer.Option(None, "--apprise", help="Apprise URL: slack://, tgram://, ntfy://, …"),
    job: str | None = typer.Option(
        None,
        "--job",
        help='Cost metrics: JSON job, e.g. {"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M"}',
    ),
    job_gpus: float = typer.Option(1, "--job-gpus", help="Cost metrics: GPUs the job runs on."),
    price_statistic: str = typer.Option("min", "--price-statistic", help="Cost metrics: the price used."),
    name: str | None = typer.Option(None, "--name"),
    allow_firing_now: bool = typer.Option(False, "--allow-firing-now", help="Accept a rule whose condition holds now."),
    disabled: bool = typer.Option(False, "--disabled"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Create an alert rule. A rule that would fire at once is refused unless --allow-firing-now.

    With --plan FILE the rule watches that workload mix's plan: its monthly cost (--metric plan_monthly_cost,
    the default, with --below/--above), or its best single card type (--metric plan_best_card, which fires
    when the card changes and takes neither)."""
    if (gpu is None) == (plan is None):
        fail("give exactly one of --gpu (a card) or --plan (a workload mix file)")
    metric = metric or ("plan_monthly_cost" if plan is not None else "min")
    if metric == "plan_best_card":
        if below is not None or above is not None:
            fail("--metric plan_best_card fires when the best card changes: give neither --below nor --above")
    elif (below is None) == (above is None):
        fail("give exactly one of --below or --above")
    check_providers(filters.providers)
    inp = RuleInput(
        gpu=gpu,
        plan=None if plan is None else _mix_document(plan),
        condition=None if metric == "plan_best_card" else "below" if below is not None else "above",
        threshold=below if below is not None else above,
        pricing=pricing,
        reserved_term=term,
        metric=metric,
        recovery_threshold=recovery,
        for_=for_,
        repeat=repeat,
        min_offers=min_offers,
        **{f: getattr(filters, f) for f in RULE_FILTERS},
        price_statistic=price_statistic,
        job=_job(job),
        job_gpus=job_gpus,
        channels=_channel_inputs(webhook, webhook_secret, apprise_url),
        name=name,
        enabled=not disabled,
        allow_immediate=allow_firing_now,
    )
    _create(ctx, inp, json_out)


def _mix_document(file: Path) -> object:
    """The mix file parsed (YAML or JSON, as `plan` reads it); create_rule validates it."""
    from tracker.cli.plan import read_mix_file
    from tracker.plan.mix import MixError, parse_source

    text = read_mix_file(file, "--plan")
    try:
        return parse_source(text, file.name)
    except MixError as exc:
        fail(f"--plan {file.name}: {exc.message}")


def _job(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        spec: dict[str, Any] = json.loads(text)
    except ValueError as exc:
        fail(f"--job is not JSON: {exc}")
    return spec


def _channel_inputs(webhook: list[str] | None, secret: str | None, apprise_url: list[str] | None) -> list[ChannelInput]:
    if secret and not webhook:
        fail("--webhook-secret needs --webhook")
    channels = [ChannelInput("webhook", u, secret) for u in webhook or []]
    return channels + [ChannelInput("apprise", u) for u in apprise_url or []]


def _create(ctx: typer.Context, inp: RuleInput, json_out: bool) -> None:
    rt = _runtime(ctx)
    try:
        with session_scope(rt.engine) as session:
            rule = create_rule(session, inp, now=utcnow(), settings=rt.settings, cost_model=default_cost_model())
            row = rule_dict(rule, reveal=True)
    except RuleError as exc:
        fail(_cli_words(exc))
    if json_out:
        emit_json(row)
        return
    console.print(f"alert {row['id']} created: {row['name']} (last value {_last(row)})")
    for ch in row["channels"]:
        if ch["secret"]:
            # One line, never wrapped: the secret is copied from here.
            console.print(f"  webhook {ch['url']} signing secret (shown once): {ch['secret']}", soft_wrap=True)


@alerts_app.command("list")
def list_cmd(ctx: typer.Context, json_out: bool = typer.Option(False, "--json")) -> None:
    """Every rule with its state."""
    rt = runtime(ctx)
    with session_scope(rt.engine) as session:
        rows = [rule_dict(r) for r in session.scalars(select(AlertRule).order_by(AlertRule.id))]
    if json_out:
        emit_json(rows)
        return
    table = Table(title=f"{len(rows)} alert rules")
    for col in ("id", "name", "state", "condition", "filters", "last value", "since", "channels", "enabled"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            str(r["id"]),
            escape(r["name"]),
            r["state"],
            _condition(r),
            escape(rule_filters(r)),
            _last(r, "-"),
            r["state_since"].strftime("%m-%d %H:%M"),
            str(len(r["channels"])),
            "yes" if r["enabled"] else "no",
        )
    show_table(
        table,
        drop=("since", "enabled", "channels", "last value"),
        wrap=("filters", "name"),
        more="--json shows every field",
    )


def _condition(r: dict[str, Any]) -> str:
    if r["condition"] == "changes":  # plan_best_card: no threshold
        return f"{r['metric']} changes"
    return f"{r['metric']} {r['condition']} {r['threshold']}"


def _last(r: dict[str, Any], none: str = "n/a") -> str:
    """The last value; a plan_best_card rule's is its card (with that single-card fleet's monthly cost)."""
    value = r["last_value"]
    if r["metric"] in ("plan_best_card", "plan_monthly_cost") and value is not None:
        value = f"${float(value):,.2f}/month"  # a plan's figure is a monthly cost (the JSON keeps 6 places)
    if r["metric"] == "plan_best_card" and r.get("best_card"):
        return f"{r['best_card']} ({value})" if value is not None else str(r["best_card"])
    return str(value or none)


def subject_pricing_text(r: dict[str, Any]) -> str:
    """ "on_demand", or "reserved 1y": a reserved rule watches one term."""
    return f"{r['pricing']} {r['reserved_term']}" if r.get("reserved_term") else str(r["pricing"])


def rule_filters(r: dict[str, Any]) -> str:
    """What a rule watches, in the words of `alerts add`'s flags: the card and every filter it sets (a plan
    rule: its workloads, whose constraints are in the mix)."""
    if r.get("subject") == "plan":
        names = [str(w.get("name")) for w in (r.get("plan") or {}).get("workloads") or []]
        return f"--plan ({len(names)} workload{'' if len(names) == 1 else 's'}: {', '.join(names)})"
    parts = [f"--gpu {r['gpu']}", f"--pricing {r['pricing']}"]
    if r.get("reserved_term"):
        parts.append(f"--term {r['reserved_term']}")
    for key, flag in (("providers", "--provider"), ("regions", "--region")):
        parts += [f"{flag} {v}" for v in r.get(key) or []]
    for key, flag in (
        ("available_only", "--available"),
        ("verified_only", "--verified"),
        ("datacenter_only", "--datacenter"),
    ):
        if r.get(key):
            parts.append(flag)
    for key, flag in (("min_gpus", "--min-gpus"), ("min_reliability", "--min-reliability"), ("cloud", "--cloud")):
        if r.get(key) is not None:
            parts.append(f"{flag} {r[key]}")
    if r.get("aggregated", "include") != "include":
        parts.append(f"--aggregated {r['aggregated']}")
    if (r.get("min_offers") or 1) != 1:
        parts.append(f"--min-offers {r['min_offers']}")
    if r.get("job"):
        parts.append("--job " + json.dumps(r["job"], separators=(",", ":")))
    return " ".join(parts)


def _get(session: Session, rule_id: int) -> AlertRule:
    rule = session.get(AlertRule, rule_id)
    if rule is None:
        fail(f"no alert rule {rule_id}")
    return rule


@alerts_app.command("show")
def show(
    ctx: typer.Context,
    rule_id: int = typer.Argument(...),
    limit: int = typer.Option(20, "--events", min=1, max=1000, help="How many recent events and notifications."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """A rule, its recent transitions and its notifications with every delivery attempt."""
    rt = runtime(ctx)
    with session_scope(rt.engine) as session:
        row = rule_dict(_get(session, rule_id))
        row["events"] = events(session, rule_id, limit=limit)
        row["notifications"] = notifications(session, rule_id, limit=limit)
    if json_out:
        emit_json(row)
        return
    console.print(f"[bold]{row['name']}[/] (#{row['id']}): {row['state']} since {row['state_since']:%Y-%m-%d %H:%M}")
    if row["subject"] == "plan" and row["condition"] == "changes":
        console.print(
            f"  {row['metric']} of the saved plan, now {_last(row)}: fires when it changes, "
            f"for {timedelta(seconds=row['for_s'])}"
        )
    else:
        of = (
            "the saved plan"
            if row["subject"] == "plan"
            else f"{', '.join(row['gpu_ids'])} ({subject_pricing_text(row)})"
        )
        console.print(
            f"  {row['metric']} of {of} {row['condition']} "
            f"{row['threshold']}, recovers at {row['recovery_threshold']}, for {timedelta(seconds=row['for_s'])}"
        )
    console.print(f"  filters: {escape(rule_filters(row))}")
    table = Table(title="events")
    for col in ("at", "from", "to", "value", "notified", "reason"):
        table.add_column(col)
    for e in row["events"]:
        table.add_row(
            f"{e['at']:%m-%d %H:%M:%S}",
            e["from_state"],
            e["to_state"],
            str(e["value"] or "-"),
            "yes" if e["notified"] else "",
            escape(e["reason"]),
        )
    show_table(table, drop=("notified", "from"), wrap=("reason",), more="--json shows every field")
    _print_notifications(row["notifications"])


def _print_notifications(rows: list[dict[str, Any]]) -> None:
    """Each notification and every attempt that failed, with its reason in full: why nothing arrived."""
    table = Table(title="notifications")
    for col in ("id", "kind", "status", "attempts", "last error"):
        table.add_column(col)
    for n in rows:
        table.add_row(str(n["id"]), n["kind"], n["status"], str(n["attempts"]), escape(n["last_error"] or ""))
    show_table(table, wrap=("last error",))
    failures = [(n["id"], a) for n in rows for a in n["history"] if not a["ok"]]
    for nid, a in failures:
        code = f" HTTP {a['status_code']}" if a["status_code"] else ""
        console.print(
            f"  notification {nid} attempt {a['attempt']} at {a['at']:%m-%d %H:%M:%S}{code}: "
            f"{escape(a['error'] or 'no reason recorded')}",
            highlight=False,
        )


@alerts_app.command("rm")
def rm(ctx: typer.Context, rule_id: int = typer.Argument(...)) -> None:
    """Delete a rule with its history and any undelivered notifications."""
    rt = runtime(ctx)
    with session_scope(rt.engine) as session:
        session.delete(_get(session, rule_id))
    console.print(f"alert {rule_id} deleted")


@alerts_app.command("test")
def test_notification(
    ctx: typer.Context, rule_id: int = typer.Argument(...), json_out: bool = typer.Option(False, "--json")
) -> None:
    """Send a test notification to every channel of a rule now. Exits 1 if one was not delivered."""
    rt = _runtime(ctx)
    try:
        results = send_test(rt.engine, rule_id, Deliverer(rt.engine, rt.settings))
    except LookupError as exc:
        fail(str(exc))
    if not results:
        fail(f"alert {rule_id} has no channels")
    if json_out:
        emit_json(results)
    else:
        for r in results:
            style = "green" if r["status"] == "delivered" else "red"
            console.print(f"  channel {r['channel_id']}: [{style}]{r['status']}[/] {r['error'] or ''}")
    if any(r["status"] != "delivered" for r in results):
        raise typer.Exit(1)


@alerts_app.command("silence")
def silence(
    ctx: typer.Context,
    rule_id: int = typer.Argument(...),
    for_: str | None = typer.Option(None, "--for", help="Mute notifications for this long, e.g. 2h."),
    off: bool = typer.Option(False, "--off", help="End the silence."),
) -> None:
    """Mute a rule's notifications for a while (it keeps evaluating and recording events)."""
    if off == (for_ is not None):
        fail("give exactly one of --for or --off")
    rt = _runtime(ctx)
    now = utcnow()
    try:
        until = None if off else now + timedelta(seconds=parse_duration(for_, "for") or 0)
        with session_scope(rt.engine) as session:
            update_rule(session, _get(session, rule_id), {"silenced_until": until}, now=now, settings=rt.settings)
    except RuleError as exc:
        fail(_cli_words(exc))
    except OverflowError:  # now + a duration past year 9999
        fail("--for is too long: a silence must end before 2100 (disable the rule to silence it for good)")
    console.print(f"alert {rule_id} " + (f"silenced until {until:%Y-%m-%d %H:%M} UTC" if until else "unsilenced"))
