"""The per-rule state machine, as a pure function of (rule state, observation, now).

    inactive ──breach──▶ pending ──breach held for `for`──▶ firing ──recovered──▶ resolved
        ▲                   │ (no breach)                     │ (repeat interval: reminder)   │
        └───────────────────┘                                 ▼                               ▼ breach
                                                                                           pending …
    any ──no value──▶ no_data ──value back──▶ the interrupted state (pending restarts as inactive)

Semantics (Prometheus `for`, Grafana recovery threshold):
* breach: value < threshold (below) / value > threshold (above).
* recovered: value ≥ recovery threshold (below) / value ≤ recovery threshold (above). Between the two
  thresholds a firing rule keeps firing and an inactive one stays inactive, so a price flapping in
  that band produces no events at all.
* pending must see a breach at every evaluation; `for` = 0 fires on the first breach.
* no_data neither fires nor resolves: a firing rule that loses its data is still firing when the data
  returns, and resolves only on a real recovered value. A pending rule starts over, because nobody saw
  the breach hold through the gap.
* a plan_best_card rule has no threshold: `step_change` fires when the plan's best single card differs
  from the card last announced, once the new card has held for `for`, and then stays firing (reminders as
  above) until the next change fires again; no_data behaves as here.
* unmatched (a rule with offer filters, and no offer passes them: tracker.alerts.observe) is a value:
  no offer at any price, i.e. +infinity. A `below` rule is not breached and has recovered ("8×H100
  available under $2.50" resolves when the last such offer goes); an `above` rule is breached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Protocol

from tracker.alerts.observe import Observation

STATES = ("inactive", "pending", "firing", "resolved", "no_data")
NO_OFFER = Decimal("Infinity")  # the value of "no offer passes the rule's filters"
CONDITIONS = ("below", "above")


class RuleState(Protocol):
    condition: str
    threshold: Decimal
    recovery_threshold: Decimal
    for_s: int
    repeat_s: int | None
    state: str
    held_state: str | None
    state_since: datetime
    pending_since: datetime | None
    last_notified_at: datetime | None
    repeats: int


@dataclass(frozen=True)
class Transition:
    from_state: str
    to_state: str
    reason: str
    notify: str | None = None  # firing | resolved | repeat


def breached(condition: str, value: Decimal, threshold: Decimal) -> bool:
    return value < threshold if condition == "below" else value > threshold


def recovered(condition: str, value: Decimal, recovery: Decimal) -> bool:
    return value >= recovery if condition == "below" else value <= recovery


def _no_data(rule: RuleState, move: Callable[[str, str], None], why: str) -> None:
    """Into no_data (once), keeping the state a returning value resumes: firing and resolved hold, pending
    starts over."""
    if rule.state != "no_data":
        rule.held_state = rule.state if rule.state in ("firing", "resolved") else "inactive"
        if rule.held_state == "inactive":
            rule.pending_since = None
        move("no_data", why)


def step(rule: RuleState, obs: Observation, now: datetime) -> list[Transition]:
    """Advance `rule` (mutated in place) by one evaluation; the transitions it made, in order."""
    out: list[Transition] = []

    def move(to: str, reason: str, notify: str | None = None) -> None:
        out.append(Transition(rule.state, to, reason, notify))
        rule.state, rule.state_since = to, now

    if obs.value is None and not obs.unmatched:
        _no_data(rule, move, obs.no_data or "no data")
        return out

    # No matching offer compares as an infinite price; it is shown as what it is.
    value = obs.value if obs.value is not None else NO_OFFER
    said = str(obs.value) if obs.value is not None else f"no matching offer ({obs.unmatched})"
    if rule.state == "no_data":
        back = rule.held_state or "inactive"
        rule.held_state = None
        move(back, f"data is back ({obs.offers} fresh offers)" if obs.value is not None else f"data is back: {said}")

    sign = "<" if rule.condition == "below" else ">"
    if rule.state in ("inactive", "resolved"):
        if breached(rule.condition, value, rule.threshold):
            rule.pending_since, rule.repeats = now, 0
            why = f"{said} {sign} threshold {rule.threshold}"
            if rule.for_s <= 0:
                rule.last_notified_at = now
                move("firing", why, "firing")
            else:
                move("pending", f"{why}; fires if it holds for {timedelta(seconds=rule.for_s)}")
    elif rule.state == "pending":
        if not breached(rule.condition, value, rule.threshold):
            rule.pending_since = None
            move("inactive", f"{said} no longer {sign} threshold {rule.threshold} before the pending period ended")
        elif rule.pending_since is None or now - rule.pending_since >= timedelta(seconds=rule.for_s):
            rule.last_notified_at = now
            move("firing", f"{said} {sign} threshold {rule.threshold} for {timedelta(seconds=rule.for_s)}", "firing")
    elif rule.state == "firing":
        if recovered(rule.condition, value, rule.recovery_threshold):
            back = "≥" if rule.condition == "below" else "≤"
            move("resolved", f"{said} {back} recovery threshold {rule.recovery_threshold}", "resolved")
        elif (
            rule.repeat_s
            and rule.last_notified_at is not None
            and now - rule.last_notified_at >= timedelta(seconds=rule.repeat_s)
        ):
            rule.repeats += 1
            rule.last_notified_at = now
            out.append(Transition("firing", "firing", f"still firing: {said} (reminder {rule.repeats})", "repeat"))
    return out


class ChangeState(RuleState, Protocol):
    last_best_card: str | None


def step_change(rule: ChangeState, obs: Observation, now: datetime) -> list[Transition]:
    """Advance a plan_best_card rule (mutated in place) by one evaluation; the transitions it made.

    The baseline is `rule.last_best_card`: the card at creation, else the first one seen. A different card
    is a breach: pending for `for` (it must stay different at every evaluation), then firing with the new
    card as the baseline. A change back before the pending period ends is no change."""
    out: list[Transition] = []

    def move(to: str, reason: str, notify: str | None = None) -> None:
        out.append(Transition(rule.state, to, reason, notify))
        rule.state, rule.state_since = to, now

    card = obs.best_card
    if obs.value is None or card is None:
        _no_data(rule, move, obs.no_data or "no data")
        return out
    if rule.state == "no_data":
        back = rule.held_state or "inactive"
        rule.held_state = None
        move(back, f"data is back: the best single card is {card}")
    baseline = rule.last_best_card
    if baseline is None:  # nothing to compare with yet
        rule.last_best_card = card
        return out
    if card == baseline:
        if rule.state == "pending":
            rule.pending_since = None
            move("inactive", f"the best single card is {card} again before the pending period ended")
        elif (
            rule.state == "firing"
            and rule.repeat_s
            and rule.last_notified_at is not None
            and now - rule.last_notified_at >= timedelta(seconds=rule.repeat_s)
        ):
            rule.repeats += 1
            rule.last_notified_at = now
            out.append(Transition("firing", "firing", f"still {card} (reminder {rule.repeats})", "repeat"))
        return out
    why = f"the best single card changed from {baseline} to {card} (${obs.value:,.2f}/month)"
    if rule.state != "pending":
        rule.pending_since, rule.repeats = now, 0
        if rule.for_s > 0:
            move("pending", f"{why}; fires if it holds for {timedelta(seconds=rule.for_s)}")
            return out
    elif rule.pending_since is not None and now - rule.pending_since < timedelta(seconds=rule.for_s):
        return out
    rule.last_notified_at = now
    rule.last_best_card = card
    move("firing", why, "firing")
    return out
