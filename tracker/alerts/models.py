"""An alert rule as schemas, declared once: `RuleCreate` (a new rule), `RulePatch` (a change to one) and
`RuleRead` (what `rule_dict` returns).

The API's rule endpoints take and answer these (documented in /docs, checked by schemathesis), and
`gpu-tracker alerts add` builds a `RuleCreate` from its options, so a rule given over HTTP and on a
command line is validated by the same code: the schema checks shapes and ranges, then
`tracker.alerts.rules` checks what needs the catalog, the market or the network (the card, the channels,
"would it fire at once"), with one validator per field for creating and updating alike.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from tracker.alerts.rules import ChannelInput, RuleError, RuleInput
from tracker.market.filters import OfferFilters
from tracker.market.responses import Number

# A mix as text in a rule body: the bound /v1/plan puts on its `source` (api.routes.plan), for the same reason.
MAX_BODY_SOURCE_CHARS = 32_000

__all__ = [
    "RULE_FILTERS",
    "ChannelRead",
    "ChannelSpec",
    "Metric",
    "RuleCreate",
    "RuleEvents",
    "RuleList",
    "RulePatch",
    "RuleRead",
    "TestSent",
]

# usd_per_mtoken: the earlier name of usd_per_mtok, still accepted; plan_*: a plan rule's (`plan`)
Metric = Literal[
    "min", "p25", "median", "cost_per_run", "usd_per_mtok", "usd_per_mtoken", "plan_monthly_cost", "plan_best_card"
]
Duration = Annotated[str | int, Field(description="Seconds, or 15m / 4h / 1d")]
_FILTER = OfferFilters.model_fields  # the offer filters a rule takes are declared there, once
# The offer filters a rule stores (a column each in alert_rules); the others apply to listings only.
RULE_FILTERS = (
    "providers",
    "regions",
    "min_gpus",
    "available_only",
    "verified_only",
    "datacenter_only",
    "min_reliability",
    "cloud",
    "aggregated",
)


class ChannelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["webhook", "apprise"]
    url: str = Field(..., min_length=1, max_length=2000)
    secret: str | None = Field(None, max_length=128, description="webhook only: whsec_<base64>; generated if absent")

    def channel_input(self) -> ChannelInput:
        return ChannelInput(self.type, self.url, self.secret)


class RuleCreate(BaseModel):
    """A new rule. The offer filters (fixed once saved, like the card) keep only matching offers, and none
    matching resolves a `below` rule; what each means for offers without the attribute:
    tracker.market.quality.

    A plan rule gives `plan` (a workload mix, as POST /v1/plan takes it, or its YAML / JSON text) instead of
    `gpu`, with metric plan_monthly_cost (below / above a monthly cost) or plan_best_card (fires when the
    plan's best single card type changes; no condition or threshold): tracker.alerts.plan_watch."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str | None = Field(None, max_length=200)
    gpu: str | None = Field(
        None, min_length=1, max_length=100, description="Card id, family or alias (required, except for a plan rule)"
    )
    plan: dict[str, Any] | Annotated[str, Field(max_length=MAX_BODY_SOURCE_CHARS)] | None = Field(
        None, description="A plan rule's workload mix (the plan's schema), or its YAML / JSON text"
    )
    pricing: Literal["on_demand", "spot", "reserved"] = "on_demand"
    reserved_term: str | None = Field(
        None, max_length=16, description="The reservation term of a reserved rule (1d, 7d, 1mo, 3mo, 1y, 3y): required"
    )
    metric: Metric = "min"
    condition: Literal["below", "above"] | None = Field(None, description="Required, except for plan_best_card")
    threshold: Decimal | None = Field(None, gt=0, lt=Decimal("1e8"), description="Required, except for plan_best_card")
    recovery_threshold: Decimal | None = Field(None, gt=0, lt=Decimal("1e8"))
    for_: Duration = Field(0, alias="for")
    repeat: Duration | None = None
    providers: list[Annotated[str, Field(max_length=64)]] | None = Field(None, max_length=100)
    regions: list[Annotated[str, Field(max_length=128)]] | None = Field(None, max_length=100)
    min_offers: int = Field(1, ge=1, le=10_000)
    available_only: bool = Field(False, description=_FILTER["available_only"].description)
    min_gpus: Decimal | None = Field(None, gt=0, le=1024, description=_FILTER["min_gpus"].description)
    verified_only: bool = Field(False, description=_FILTER["verified_only"].description)
    datacenter_only: bool = Field(False, description=_FILTER["datacenter_only"].description)
    min_reliability: Decimal | None = Field(None, ge=0, le=1, description=_FILTER["min_reliability"].description)
    cloud: Literal["secure", "community"] | None = None
    aggregated: Literal["include", "exclude", "dedupe"] = Field(
        "include", description=_FILTER["aggregated"].description
    )
    price_statistic: Literal["min", "p25", "median"] = "min"
    job: dict[str, Any] | None = None
    job_gpus: Decimal = Field(Decimal(1), gt=0, le=64)
    channels: list[ChannelSpec] = Field(default_factory=list, max_length=20)
    enabled: bool = True
    silenced_until: AwareDatetime | None = None
    allow_immediate: bool = Field(False, description="Accept a rule whose condition already holds")

    def rule_input(self) -> RuleInput:
        """What `tracker.alerts.rules.create_rule` validates further and stores."""
        fields = {name: getattr(self, name) for name in type(self).model_fields if name != "channels"}
        return RuleInput(**fields, channels=[c.channel_input() for c in self.channels])


# What a change may not set to null: these have no "unset" value.
_NOT_NULL = ("name", "threshold", "enabled", "min_offers")


class RulePatch(BaseModel):
    """A change to a rule: thresholds, timing, channels, enabled, silence. The subject and metric are fixed."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str | None = Field(None, max_length=200)
    threshold: Decimal | None = Field(None, gt=0, lt=Decimal("1e8"))
    recovery_threshold: Decimal | None = Field(None, gt=0, lt=Decimal("1e8"))
    for_: Duration | None = Field(None, alias="for")
    repeat: Duration | None = None
    enabled: bool | None = None
    silenced_until: AwareDatetime | None = None
    min_offers: int | None = Field(None, ge=1, le=10_000)
    channels: list[ChannelSpec] | None = Field(None, max_length=20)

    def changes(self) -> dict[str, Any]:
        """The fields given, by the names `tracker.alerts.rules.update_rule` takes; RuleError for a null
        where the field has no unset value."""
        out: dict[str, Any] = {}
        for name in self.model_fields_set:
            key = "for" if name == "for_" else name
            value = getattr(self, name)
            if key in _NOT_NULL and value is None:
                raise RuleError(f"{key} cannot be null", key)
            out[key] = [c.channel_input() for c in value] if key == "channels" and value is not None else value
        return out


class ChannelRead(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: int
    type: str
    url: str  # redacted except in the answer that created it
    secret: str | None  # a webhook's signing secret: whole once, then only its last characters


class RuleRead(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: int
    name: str | None
    subject: str = "offers"  # offers | plan
    plan: dict[str, Any] | None = None  # a plan rule's workload mix
    best_card: str | None = None  # a plan_best_card rule's card, last announced
    gpu: str
    gpu_ids: list[str]
    pricing: str
    reserved_term: str | None = None
    providers: list[str] | None
    regions: list[str] | None
    min_offers: int
    available_only: bool
    min_gpus: Number | None
    verified_only: bool
    datacenter_only: bool
    min_reliability: Number | None
    cloud: str | None
    aggregated: str
    metric: str
    price_statistic: str | None
    job: dict[str, Any] | None
    job_gpus: Number | None
    condition: str
    threshold: Number
    recovery_threshold: Number | None
    for_s: int
    repeat_s: int | None
    enabled: bool
    silenced_until: datetime | None
    allow_immediate: bool
    state: str
    state_since: datetime | None
    pending_since: datetime | None
    last_value: Number | None
    last_evaluated_at: datetime | None
    last_notified_at: datetime | None
    created_at: datetime
    updated_at: datetime
    channels: list[ChannelRead]


class RuleList(BaseModel):
    alerts: list[RuleRead]
    count: int


class RuleEvents(BaseModel):
    rule_id: int
    events: list[dict[str, Any]]
    notifications: list[dict[str, Any]]


class TestSent(BaseModel):
    __test__ = False  # not a pytest test class, whatever its name

    rule_id: int
    sent_at: datetime
    results: list[dict[str, Any]]
