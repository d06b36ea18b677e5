"""What a run really costs: GPU time plus billing rounding, disk, data transfer and, on spot, interruptions.

`terms` resolves an offer's cost terms (its API, else the provider's dated sheet, else a default, each
marked), `plan` the job's extras (data, checkpoints, setup), `spot` the interruption closed forms,
`run` the exact breakdown of one run and its vectorised twin for ranking, `frame` the terms of every
live offer as columns. Layer: between tracker.market (which ranks on it) and tracker.ingest|estimate.
"""

from tracker.costs.frame import TermColumns, load_stated, term_columns
from tracker.costs.plan import RunPlan, plan_for
from tracker.costs.run import COMPONENTS, RunCost, run_cost, run_total, vector_totals
from tracker.costs.terms import DEFAULTS, CostTerms, resolve, sheet

__all__ = [
    "COMPONENTS",
    "DEFAULTS",
    "CostTerms",
    "RunCost",
    "RunPlan",
    "TermColumns",
    "load_stated",
    "plan_for",
    "resolve",
    "run_cost",
    "run_total",
    "sheet",
    "term_columns",
    "vector_totals",
]
