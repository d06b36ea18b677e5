"""Fleet planning: a workload mix placed on live offers, each workload on the card that wins it.

`mix` is the file format and its schema, `planner` the placement, fleet, single-card comparison and power
budget, `service` the live plan and the plan over time for the CLI and the API. The layer sits above the
market (it ranks live offers) and below the alerts, which may watch a saved plan's monthly cost.
"""

from tracker.plan.mix import MixError, WorkloadMix, load_mix, plan_schema, validate_mix
from tracker.plan.planner import PlanOptions, plan

__all__ = ["MixError", "PlanOptions", "WorkloadMix", "load_mix", "plan", "plan_schema", "validate_mix"]
