"""Creating, changing and showing alert rules: the one validation point for the CLI and the API.

Every bad input raises `RuleError` naming the field, so the CLI prints it and the API returns 422.

Offer filters (`available_only`, `min_gpus`, and the quality filters `verified_only`, `datacenter_only`,
`min_reliability`, `cloud` of tracker.market.quality) are part of the rule's subject: fixed once saved,
like the card. With them, a `min` rule below $2.50 fires exactly when a matching offer under $2.50
exists, and resolves when none does (tracker.alerts.observe).

Decision — a rule that would fire at once is **rejected** at creation (field `threshold`, with the
current value in the message) unless the creator passes `allow_immediate`, which is then stored on
the rule. An alert that fires the moment it is saved tells the user nothing they did not just see,
and is usually a threshold on the wrong side (camelcamelcamel's "never fire on creation"). A rule
whose subject has no trustworthy data yet cannot be judged, so it is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlalchemy.orm import Session

from providers.contract import Pricing
from providers.registry import UnknownProvider, all_providers
from tracker.alerts.channels import CHANNEL_KINDS, check_channel, needed_networks, new_webhook_secret, secret_key
from tracker.alerts.job_cost import COST_METRICS, METRIC_ALIASES, CostError, CostModel
from tracker.alerts.observe import METRICS, PRICE_STATISTICS, observe
from tracker.alerts.plan_watch import BEST_CARD, CHANGES, PLAN, PLAN_METRICS, observe_plan, read_mix
from tracker.alerts.ssrf import Resolver, UnsafeUrl, system_resolver
from tracker.alerts.states import CONDITIONS, NO_OFFER, breached
from tracker.catalog.gpus import GpuNameError, get_catalog
from tracker.clock import EARLIEST, LATEST, in_service_range
from tracker.config import Settings
from tracker.market import aggregated as resales
from tracker.market.quality import CLOUDS
from tracker.market.statistics import TermError, commitment
from tracker.money import parse_amount, to_money
from tracker.plan.mix import MixError
from tracker.storage.alert_tables import AlertChannel, AlertRule

MAX_FOR = timedelta(days=7)
MIN_REPEAT = timedelta(minutes=1)
MAX_REPEAT = timedelta(days=30)
_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)", re.IGNORECASE)
_UNIT_S = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
# A silence ends inside the service's time range (tracker.clock); a silence "forever" is `enabled: false`.


class RuleError(ValueError):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def parse_duration(value: str | int | float | None, field: str) -> int | None:
    """'15m', '1h30m', '2d', '90' (seconds) → seconds; None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise RuleError(f"{field} must be a duration like 15m, 4h or 1d", field)
    if isinstance(value, int | float):
        seconds = float(value) if abs(value) < 1e12 else 1e12  # float() of a huge int would overflow
    else:
        text = value.strip().lower().replace(" ", "")
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        elif text and _DURATION_RE.sub("", text) == "":
            seconds = sum(float(n) * _UNIT_S[u.lower()] for n, u in _DURATION_RE.findall(text))
        else:
            raise RuleError(f"{field} must be a duration like 15m, 4h or 1d, got {value!r}", field)
    if seconds < 0:
        raise RuleError(f"{field} must not be negative", field)
    if not seconds < 1e12:  # also NaN and infinity
        raise RuleError(f"{field} is too long", field)
    return int(seconds)


def check_silence(until: Any) -> datetime | None:
    """`until` (a timezone-aware datetime in the silence window, or None); RuleError otherwise."""
    if until is None:
        return None
    if not isinstance(until, datetime) or until.utcoffset() is None:
        raise RuleError("silenced_until must be a timezone-aware date-time (or null)", "silenced_until")
    if not in_service_range(until):
        raise RuleError(
            f"silenced_until must be between {EARLIEST.date()} and {LATEST.date()} (UTC); "
            "to silence a rule for good, disable it",
            "silenced_until",
        )
    return until


def parse_money(value: Any, field: str) -> Decimal:
    try:
        amount = parse_amount(value if isinstance(value, Decimal | float | int | str) else str(value))
    except ValueError:
        raise RuleError(f"{field} must be an amount in dollars, got {value!r}", field) from None
    if amount <= 0:
        raise RuleError(f"{field} must be a positive amount, got {value!r}", field)
    if amount >= Decimal("1e8"):
        raise RuleError(f"{field} is implausibly large: {value!r}", field)
    return to_money(amount)


@dataclass
class ChannelInput:
    type: str
    url: str
    secret: str | None = None


@dataclass
class RuleInput:
    gpu: str | None  # a price rule's card; None for a plan rule
    condition: str | None  # below | above; None for plan_best_card, which has no threshold
    threshold: Any
    pricing: str = "on_demand"
    reserved_term: str | None = None
    metric: str = "min"
    recovery_threshold: Any = None
    for_: str | int | float | None = 0
    repeat: str | int | float | None = None
    providers: list[str] | None = None
    regions: list[str] | None = None
    min_offers: int = 1
    # Offer filters: only offers passing all of them count (tracker.market.quality says what they mean).
    available_only: bool = False
    min_gpus: Any = None
    verified_only: bool = False
    datacenter_only: bool = False
    min_reliability: Any = None
    cloud: str | None = None
    aggregated: str = "include"  # resales, as tracker.market.aggregated counts them
    price_statistic: str = "min"
    job: dict[str, Any] | None = None
    job_gpus: Any = 1
    channels: list[ChannelInput] = field(default_factory=list)
    name: str | None = None
    enabled: bool = True
    silenced_until: datetime | None = None
    allow_immediate: bool = False
    # A plan rule's workload mix: the parsed document, or its YAML / JSON text (tracker.alerts.plan_watch).
    plan: Any = None


def subject_pricing(rule: Any) -> str:
    """The pricing a rule watches in words: "on_demand", or "reserved 1y" with its term."""
    return f"{rule.pricing} {rule.reserved_term}" if rule.reserved_term else str(rule.pricing)


def _thresholds(condition: str | None, threshold: Decimal, recovery: Decimal) -> None:
    if condition == "below" and recovery < threshold:
        raise RuleError(
            f"recovery_threshold {recovery} must be at or above threshold {threshold} for a 'below' "
            "rule (the price has to climb back before the alert resolves)",
            "recovery_threshold",
        )
    if condition == "above" and recovery > threshold:
        raise RuleError(
            f"recovery_threshold {recovery} must be at or below threshold {threshold} for an 'above' rule",
            "recovery_threshold",
        )


def _channels(
    channels: Sequence[ChannelInput], settings: Settings, resolver: Resolver, now: datetime
) -> list[AlertChannel]:
    out = []
    for i, ch in enumerate(channels):
        kind = (ch.type or "").strip().lower()
        if kind not in CHANNEL_KINDS:
            raise RuleError(
                f"channel type must be one of {', '.join(CHANNEL_KINDS)}, got {ch.type!r}", f"channels[{i}].type"
            )
        url = (ch.url or "").strip()
        _printable(url, f"channels[{i}].url")
        if not url or len(url) > 2000:
            raise RuleError("channel url is required (at most 2000 characters)", f"channels[{i}].url")
        try:
            check_channel(kind, url, settings.allowed_networks, resolver=resolver)
        except UnsafeUrl as exc:
            raise RuleError(str(exc), f"channels[{i}].url") from None
        allow = needed_networks(kind, url, settings.allowed_networks, resolver=resolver)
        secret = None
        if kind == "webhook":
            secret = ch.secret or new_webhook_secret()
            try:
                secret_key(secret)
            except ValueError as exc:
                raise RuleError(str(exc), f"channels[{i}].secret") from None
        elif ch.secret:
            raise RuleError("only webhook channels take a secret", f"channels[{i}].secret")
        out.append(AlertChannel(kind=kind, url=url, secret=secret, allow_networks=allow, created_at=now))
    return out


def _printable(value: str, field: str) -> None:
    # Postgres text cannot hold NUL, and control characters in a name are never intended.
    if any(ord(ch) < 32 for ch in value):
        raise RuleError(f"{field} contains control characters", field)


def _flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise RuleError(f"{field} must be true or false", field)
    return value


def _number(value: Any, field: str, low: Decimal, high: Decimal, *, low_open: bool = False) -> Decimal | None:
    """A decimal in [low, high] (or (low, high] with `low_open`), None staying None."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise RuleError(f"{field} must be a number", field)
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise RuleError(f"{field} must be a number, got {value!r}", field) from None
    above_low = number > low if low_open else number >= low
    if not number.is_finite() or not above_low or number > high:
        side = "above" if low_open else "at least"
        raise RuleError(f"{field} must be {side} {low} and at most {high}, got {value!r}", field)
    return number


def _offer_filters(inp: RuleInput) -> dict[str, Any]:
    """The rule's offer filters, validated, as AlertRule column values."""
    cloud = inp.cloud.strip().lower() if isinstance(inp.cloud, str) and inp.cloud.strip() else None
    if inp.cloud is not None and cloud not in CLOUDS:
        raise RuleError(f"cloud must be one of {', '.join(CLOUDS)}, got {inp.cloud!r}", "cloud")
    # Rounded to what the columns hold first, so the stored filter is the one validated.
    min_gpus = _number(_rounded(inp.min_gpus, "0.001"), "min_gpus", Decimal(0), Decimal(1024), low_open=True)
    reliability = _number(_rounded(inp.min_reliability, "0.0001"), "min_reliability", Decimal(0), Decimal(1))
    try:
        resales.check(inp.aggregated)
    except ValueError as exc:
        raise RuleError(str(exc), "aggregated") from None
    return {
        "available_only": _flag(inp.available_only, "available_only"),
        "min_gpus": min_gpus,
        "verified_only": _flag(inp.verified_only, "verified_only"),
        "datacenter_only": _flag(inp.datacenter_only, "datacenter_only"),
        "min_reliability": reliability,
        "cloud": cloud,
        "aggregated": inp.aggregated,
    }


def _rounded(value: Any, places: str) -> Any:
    """`value` rounded to `places` when it is a plain number; anything else is left for _number to refuse."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        return value
    try:
        number = Decimal(str(value))
        return number.quantize(Decimal(places)) if number.is_finite() and abs(number) < 10**9 else number
    except InvalidOperation:
        return value


def _names(values: list[str] | None, field: str, known: Sequence[str] | None = None) -> list[str] | None:
    if not values:
        return None
    cleaned = list(dict.fromkeys(v.strip() for v in values if v and v.strip()))
    for v in cleaned:
        _printable(v, field)
        if len(v) > 128:
            raise RuleError(f"{field} entry too long: {v[:40]!r}…", field)
        if known is not None and v not in known:
            raise RuleError(str(UnknownProvider(v, list(known))), field)
    return cleaned or None


# One validator per field a rule is created with and may later change: both give the same answer and message.


def _name(value: Any) -> str:
    name = (value or "").strip() if isinstance(value, str) or value is None else value
    if not isinstance(name, str) or not name or len(name) > 200:
        raise RuleError("name must be 1-200 characters", "name")
    _printable(name, "name")
    return name


def _for_s(value: Any) -> int:
    for_s = parse_duration(value, "for") or 0
    if for_s > MAX_FOR.total_seconds():
        raise RuleError(f"for must be at most {MAX_FOR}", "for")
    return for_s


def _repeat_s(value: Any) -> int | None:
    repeat_s = parse_duration(value, "repeat")
    if repeat_s is not None and not MIN_REPEAT.total_seconds() <= repeat_s <= MAX_REPEAT.total_seconds():
        raise RuleError(f"repeat must be between {MIN_REPEAT} and {MAX_REPEAT} (or none, for no reminders)", "repeat")
    return repeat_s


def _min_offers(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10_000:
        raise RuleError("min_offers must be an integer from 1 to 10000", "min_offers")
    return value


def _subject(inp: RuleInput) -> tuple[str, list[Any], str, RuleInput]:
    """The card query, its cards, the pricing type, and `inp` with its metric's current name and its
    reservation term in the one spelling (required for reserved, refused otherwise)."""
    gpu_query = (inp.gpu or "").strip()
    _printable(gpu_query, "gpu")
    if not gpu_query or len(gpu_query) > 100:
        raise RuleError("gpu is required: a card id, family or alias such as H100 or H100-SXM-80GB", "gpu")
    try:
        cards = get_catalog().resolve(gpu_query)
    except GpuNameError as exc:
        raise RuleError(str(exc), "gpu") from None
    if not cards:
        raise RuleError(f"unknown GPU {gpu_query!r}", "gpu")
    try:
        pricing = Pricing(inp.pricing).value
    except ValueError:
        raise RuleError(
            f"pricing must be one of {', '.join(p.value for p in Pricing)}, got {inp.pricing!r}", "pricing"
        ) from None
    try:
        term = commitment(pricing, inp.reserved_term, "reserved_term")
    except TermError as exc:
        raise RuleError(str(exc), exc.field) from None
    inp = replace(inp, metric=METRIC_ALIASES.get(inp.metric, inp.metric), reserved_term=term)
    if inp.metric not in METRICS:
        raise RuleError(f"metric must be one of {', '.join(METRICS)}, got {inp.metric!r}", "metric")
    if inp.price_statistic not in PRICE_STATISTICS:
        raise RuleError(f"price_statistic must be one of {', '.join(PRICE_STATISTICS)}", "price_statistic")
    if inp.metric != "min" and len(cards) > 1:
        # Percentiles and costs are per card (never blended across SXM/PCIe); the minimum is meaningful pooled.
        raise RuleError(
            f"{gpu_query!r} covers {len(cards)} cards ({', '.join(c.id for c in cards)}); a {inp.metric} alert "
            "needs one card — name it, or use metric min",
            "gpu",
        )
    if inp.condition not in CONDITIONS:
        raise RuleError(f"condition must be 'below' or 'above', got {inp.condition!r}", "condition")
    return gpu_query, cards, pricing, inp


def _cost_job(inp: RuleInput, card: str, cost_model: CostModel | None) -> tuple[dict[str, Any] | None, Decimal]:
    """The job and GPU count a cost alert prices (None and 1 for a price alert)."""
    if inp.metric not in COST_METRICS:
        if inp.job:
            raise RuleError("job only applies to cost_per_run and usd_per_mtok alerts", "job")
        return None, Decimal(1)
    if cost_model is None:
        raise RuleError("cost metrics need the estimate model (tracker.estimate), which is not available", "metric")
    if not inp.job:
        raise RuleError(
            f'a {inp.metric} alert needs a job, e.g. {{"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M"}}',
            "job",
        )
    try:
        job_gpus = Decimal(str(inp.job_gpus))
    except InvalidOperation:
        raise RuleError(f"job_gpus must be a number, got {inp.job_gpus!r}", "job_gpus") from None
    if not job_gpus.is_finite() or not 0 < job_gpus <= 64:
        raise RuleError("job_gpus must be between 0 and 64", "job_gpus")
    try:
        cost_model.check(inp.job, card, job_gpus)
    except CostError as exc:
        raise RuleError(str(exc), exc.field) from None
    return dict(inp.job), job_gpus


def _refuse_immediate(rule: AlertRule, obs: Any, inp: RuleInput) -> None:
    # No matching offer is a value too (infinity): an `above` rule with none would fire at once.
    current = obs.value if obs.value is not None else (NO_OFFER if obs.unmatched else None)
    if current is not None and breached(rule.condition, current, rule.threshold) and not inp.allow_immediate:
        now_text = f"is {obs.value} now" if obs.value is not None else f"has no matching offer now ({obs.unmatched})"
        raise RuleError(
            f"the {rule.metric} of {rule.gpu_query} ({subject_pricing(rule)}) {now_text}, already {rule.condition} "
            f"{rule.threshold}: this rule would fire at once. Choose another threshold, or set allow_immediate "
            "to keep it",
            "threshold",
        )


def create_rule(
    session: Session,
    inp: RuleInput,
    *,
    now: datetime,
    settings: Settings,
    cost_model: CostModel | None,
    resolver: Resolver = system_resolver,
) -> AlertRule:
    """Validate `inp`, store the rule with its channels, and return it (flushed, with ids)."""
    if inp.plan is not None or inp.metric in PLAN_METRICS:
        return _create_plan_rule(session, inp, now=now, settings=settings, resolver=resolver)
    gpu_query, cards, pricing, inp = _subject(inp)
    if inp.threshold is None:
        raise RuleError("threshold is required: the value the metric is compared with", "threshold")
    threshold = parse_money(inp.threshold, "threshold")
    recovery = threshold
    if inp.recovery_threshold is not None:
        recovery = parse_money(inp.recovery_threshold, "recovery_threshold")
    _thresholds(inp.condition, threshold, recovery)
    for_s, repeat_s, min_offers = _for_s(inp.for_), _repeat_s(inp.repeat), _min_offers(inp.min_offers)
    providers = _names(inp.providers, "providers", list(all_providers()))
    regions = _names(inp.regions, "regions")
    offer_filters = _offer_filters(inp)
    job, job_gpus = _cost_job(inp, cards[0].id, cost_model)
    silenced_until = check_silence(inp.silenced_until)
    channels = _channels(inp.channels, settings, resolver, now)
    watched = f"{pricing} {inp.reserved_term}" if inp.reserved_term else pricing
    default_name = f"{gpu_query} {watched} {inp.metric} {inp.condition} {threshold.normalize():f}"
    name = _name((inp.name or "").strip() or default_name)

    rule = AlertRule(
        name=name,
        gpu_query=gpu_query,
        gpu_ids=[c.id for c in cards],
        pricing=pricing,
        reserved_term=inp.reserved_term,
        providers=providers,
        regions=regions,
        min_offers=min_offers,
        **offer_filters,
        metric=inp.metric,
        price_statistic=inp.price_statistic,
        job=job,
        job_gpus=job_gpus,
        condition=inp.condition,
        threshold=threshold,
        recovery_threshold=recovery,
        for_s=for_s,
        repeat_s=repeat_s,
        enabled=bool(inp.enabled),
        silenced_until=silenced_until,
        allow_immediate=bool(inp.allow_immediate),
        **_fresh_state(now),
    )
    obs = observe(session, rule, now=now, settings=settings, cost_model=cost_model)
    _refuse_immediate(rule, obs, inp)
    rule.last_value = obs.value
    rule.channels = channels
    session.add(rule)
    session.flush()
    return rule


# What a plan rule leaves at its default: the subject is the mix, and a workload's constraints (providers,
# regions, pricing, GPUs per node, ...) are written in the mix, where the plan reads them.
_NOT_FOR_PLANS: dict[str, Any] = {
    "gpu": None,
    "pricing": "on_demand",
    "reserved_term": None,
    "providers": None,
    "regions": None,
    "min_offers": 1,
    "available_only": False,
    "min_gpus": None,
    "verified_only": False,
    "datacenter_only": False,
    "min_reliability": None,
    "cloud": None,
    "aggregated": "include",
    "price_statistic": "min",
    "job": None,
}


def _plan_subject(inp: RuleInput) -> tuple[Any, dict[str, Any]]:
    """The rule's mix (validated by the plan's own loader) and the document stored; RuleError naming the
    field (`plan.workloads[0].job.model`) otherwise."""
    if inp.plan is None:
        raise RuleError(f"a {inp.metric} alert needs a plan: the workload mix `gpu-tracker plan` reads", "plan")
    if inp.metric not in PLAN_METRICS:
        raise RuleError(f"a plan alert's metric is one of {', '.join(PLAN_METRICS)}, got {inp.metric!r}", "metric")
    for name, default in _NOT_FOR_PLANS.items():
        value = getattr(inp, name)
        unset = default is None and (value is None or value == [] or (isinstance(value, str) and not value.strip()))
        if value != default and not unset:
            raise RuleError(
                f"{name} does not apply to a plan alert: a workload's constraints are part of the mix", name
            )
    if Decimal(str(inp.job_gpus)) != 1:
        raise RuleError("job_gpus does not apply to a plan alert", "job_gpus")
    try:
        return read_mix(inp.plan)
    except MixError as exc:
        raise RuleError(f"plan: {exc.message}", f"plan.{exc.field}" if exc.field else "plan") from None


def _plan_thresholds(inp: RuleInput) -> tuple[str, Decimal, Decimal]:
    """(condition, threshold, recovery): below / above a monthly cost, or `changes` for the best card."""
    if inp.metric == BEST_CARD:
        for name in ("threshold", "recovery_threshold"):
            if getattr(inp, name) is not None:
                raise RuleError(f"{name} does not apply to {BEST_CARD}: it fires when the card changes", name)
        if inp.condition not in (None, CHANGES):
            raise RuleError(f"a {BEST_CARD} alert has no condition (it fires on a change)", "condition")
        return CHANGES, to_money(0), to_money(0)
    if inp.condition not in CONDITIONS:
        raise RuleError(f"condition must be 'below' or 'above', got {inp.condition!r}", "condition")
    if inp.threshold is None:
        raise RuleError("threshold is required: a monthly cost in dollars", "threshold")
    threshold = parse_money(inp.threshold, "threshold")
    recovery = threshold
    if inp.recovery_threshold is not None:
        recovery = parse_money(inp.recovery_threshold, "recovery_threshold")
    _thresholds(inp.condition, threshold, recovery)
    return inp.condition, threshold, recovery


def _create_plan_rule(
    session: Session, inp: RuleInput, *, now: datetime, settings: Settings, resolver: Resolver
) -> AlertRule:
    mix, document = _plan_subject(inp)
    condition, threshold, recovery = _plan_thresholds(inp)
    for_s, repeat_s = _for_s(inp.for_), _repeat_s(inp.repeat)
    silenced_until = check_silence(inp.silenced_until)
    channels = _channels(inp.channels, settings, resolver, now)
    names = ", ".join(w.name for w in mix.workloads)
    names = names if len(names) <= 60 else names[:59] + "…"
    watched = "best card changes" if condition == CHANGES else f"{inp.metric} {condition} {threshold.normalize():f}"
    name = _name((inp.name or "").strip() or f"plan ({names}) {watched}")
    rule = AlertRule(
        name=name,
        subject=PLAN,
        plan_mix=document,
        gpu_query=PLAN,
        gpu_ids=[],
        pricing=PLAN,  # each workload's own (the mix's constraints, else the ranking's default)
        reserved_term=None,
        providers=None,
        regions=None,
        min_offers=1,
        metric=inp.metric,
        price_statistic="min",
        job=None,
        job_gpus=Decimal(1),
        condition=condition,
        threshold=threshold,
        recovery_threshold=recovery,
        for_s=for_s,
        repeat_s=repeat_s,
        enabled=bool(inp.enabled),
        silenced_until=silenced_until,
        allow_immediate=bool(inp.allow_immediate),
        **_fresh_state(now),
    )
    obs = observe_plan(session, rule, now=now, settings=settings)
    if (
        condition != CHANGES
        and obs.value is not None
        and breached(condition, obs.value, threshold)
        and not inp.allow_immediate
    ):
        raise RuleError(
            f"the plan's monthly cost is {obs.value} now, already {condition} {threshold}: this rule would fire "
            "at once. Choose another threshold, or set allow_immediate to keep it",
            "threshold",
        )
    # The card a change is measured from: today's (none yet if the plan has no data: the first one seen).
    rule.last_best_card = obs.best_card if condition == CHANGES else None
    rule.last_value = obs.value
    rule.channels = channels
    session.add(rule)
    session.flush()
    return rule


UPDATABLE = {
    "name",
    "threshold",
    "recovery_threshold",
    "for",
    "repeat",
    "enabled",
    "silenced_until",
    "min_offers",
    "channels",
}


def update_rule(
    session: Session,
    rule: AlertRule,
    changes: dict[str, Any],
    *,
    now: datetime,
    settings: Settings,
    resolver: Resolver = system_resolver,
) -> AlertRule:
    """Apply a partial update, all or nothing: every change is validated before any is applied.

    Changing the subject or the metric means a new rule (the old one's history would describe
    something else)."""
    unknown = set(changes) - UPDATABLE
    if unknown:
        bad = sorted(unknown)[0]
        raise RuleError(
            f"{bad} cannot be changed; delete the rule and create a new one "
            f"(changeable: {', '.join(sorted(UPDATABLE))})",
            bad,
        )
    if rule.metric == BEST_CARD:
        for bad in ("threshold", "recovery_threshold"):
            if bad in changes:
                raise RuleError(f"{bad} does not apply to {BEST_CARD}: it fires when the card changes", bad)
    new: dict[str, Any] = {}
    if "name" in changes:
        new["name"] = _name(changes["name"])
    threshold = parse_money(changes["threshold"], "threshold") if "threshold" in changes else rule.threshold
    if changes.get("recovery_threshold") is not None:
        recovery = parse_money(changes["recovery_threshold"], "recovery_threshold")
    elif "recovery_threshold" in changes or ("threshold" in changes and rule.recovery_threshold == rule.threshold):
        recovery = threshold  # null, or there was no hysteresis before: none after
    else:
        recovery = rule.recovery_threshold
    _thresholds(rule.condition, threshold, recovery)
    new["threshold"], new["recovery_threshold"] = threshold, recovery
    if "for" in changes:
        new["for_s"] = _for_s(changes["for"])
    if "repeat" in changes:
        new["repeat_s"] = _repeat_s(changes["repeat"])
    if "enabled" in changes:
        if not isinstance(changes["enabled"], bool):
            raise RuleError("enabled must be true or false", "enabled")
        new["enabled"] = changes["enabled"]
    if "silenced_until" in changes:
        new["silenced_until"] = check_silence(changes["silenced_until"])
    if "min_offers" in changes:
        new["min_offers"] = _min_offers(changes["min_offers"])
    if "channels" in changes:
        # Replacing channels drops messages still queued for the old ones (their rows cascade away).
        new["channels"] = _channels(changes["channels"] or [], settings, resolver, now)
    for key, value in new.items():
        setattr(rule, key, value)
    rule.updated_at = now
    session.flush()
    return rule


def _redact_url(kind: str, url: str) -> str:
    if kind == "apprise":
        return url.split("://", 1)[0] + "://…"
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1]
    return f"{scheme}://{host}/…" if rest[len(host) :].strip("/") else f"{scheme}://{host}/"


def channel_dict(ch: AlertChannel, *, reveal: bool = False) -> dict[str, Any]:
    secret = ch.secret
    if secret and not reveal:
        secret = f"whsec_…{secret[-4:]}"
    return {"id": ch.id, "type": ch.kind, "url": ch.url if reveal else _redact_url(ch.kind, ch.url), "secret": secret}


def rule_dict(rule: AlertRule, *, reveal: bool = False) -> dict[str, Any]:
    """The public shape of a rule (CLI --json and the API). Secrets only with `reveal` (on creation)."""
    return {
        "id": rule.id,
        "name": rule.name,
        "subject": rule.subject or "offers",
        "plan": rule.plan_mix,
        "best_card": rule.last_best_card,
        "gpu": rule.gpu_query,
        "gpu_ids": list(rule.gpu_ids),
        "pricing": rule.pricing,
        "reserved_term": rule.reserved_term,
        "providers": rule.providers,
        "regions": rule.regions,
        "min_offers": rule.min_offers,
        "available_only": rule.available_only,
        "min_gpus": rule.min_gpus,
        "verified_only": rule.verified_only,
        "datacenter_only": rule.datacenter_only,
        "min_reliability": rule.min_reliability,
        "cloud": rule.cloud,
        "aggregated": rule.aggregated,
        "metric": rule.metric,
        "price_statistic": rule.price_statistic if rule.metric in COST_METRICS else None,
        "job": rule.job,
        "job_gpus": rule.job_gpus if rule.metric in COST_METRICS else None,
        "condition": rule.condition,
        "threshold": rule.threshold,
        "recovery_threshold": rule.recovery_threshold,
        "for_s": rule.for_s,
        "repeat_s": rule.repeat_s,
        "enabled": rule.enabled,
        "silenced_until": rule.silenced_until,
        "allow_immediate": rule.allow_immediate,
        "state": rule.state,
        "state_since": rule.state_since,
        "pending_since": rule.pending_since,
        "last_value": rule.last_value,
        "last_evaluated_at": rule.last_evaluated_at,
        "last_notified_at": rule.last_notified_at,
        "created_at": rule.created_at,
        "updated_at": rule.updated_at,
        "channels": [channel_dict(c, reveal=reveal) for c in rule.channels],
    }


def _fresh_state(now: datetime) -> dict[str, Any]:
    """A new rule's state, whatever it watches: inactive since now, nothing pending or repeated."""
    return {
        "state": "inactive",
        "held_state": None,
        "state_since": now,
        "pending_since": None,
        "repeats": 0,
        "created_at": now,
        "updated_at": now,
    }
