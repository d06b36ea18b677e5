"""Interruptions of a spot run in closed form.

Model: interruptions arrive as a Poisson process at `rate` per hour of productive run time `work_h`,
so their number N is Poisson with mean mu = rate × work_h. Each one costs the work since the last
checkpoint, on average half a checkpoint interval, plus the restart: loss L = interval / 2 + restart.
Then the wall time is work_h + N × L, and
* E[wall] = work_h + mu × L (linear in the rate, in the run length and in the interval);
* P(no interruption) = exp(-mu), falling with the run length: the seed's "a 10-hour run on spot has
  more chances to be preempted than a 3-hour one";
* P(wall <= deadline) = P(N <= floor((deadline - work_h) / L)), the Poisson CDF there.
Interruptions during a restart are not counted (first order in rate × L, small when L ≪ 1 / rate).
"""

from __future__ import annotations

import math

__all__ = ["expected_wall", "loss_per_interruption", "p_within", "poisson_cdf", "poisson_quantile"]


def loss_per_interruption(interval_h: float, restart_h: float, train_h: float) -> float:
    """Hours one interruption costs: half the work since the last checkpoint (never more than half the
    training, for runs shorter than an interval) plus the restart."""
    return min(interval_h, train_h) / 2.0 + restart_h


def expected_wall(work_h: float, rate: float, loss_h: float) -> float:
    return work_h + rate * work_h * loss_h


# Past this mean the sums below would take ~mu steps and e^-mu underflows: the normal approximation
# (with continuity correction) is then within a few 1e-3 of the exact figure, plenty for a percentage.
_NORMAL_FROM_MU = 50.0
_Z95 = 1.6448536269514722


def _normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def poisson_cdf(k: int, mu: float) -> float:
    """P(N <= k) for N ~ Poisson(mu)."""
    if k < 0:
        return 0.0
    if mu <= 0:
        return 1.0
    if mu > _NORMAL_FROM_MU:
        return _normal_cdf((k + 0.5 - mu) / math.sqrt(mu))
    term = total = math.exp(-mu)
    for i in range(1, k + 1):
        term *= mu / i
        total += term
        if term < 1e-17 * total and i > mu:
            break
    return min(total, 1.0)


def poisson_quantile(q: float, mu: float) -> int:
    """The smallest k with P(N <= k) >= q."""
    if mu <= 0:
        return 0
    if mu > _NORMAL_FROM_MU:
        z = _Z95 if q == 0.95 else _inverse_normal(q)
        return max(0, math.ceil(mu + z * math.sqrt(mu) - 0.5))
    k, term = 0, math.exp(-mu)
    total = term
    while total < q and k < 1_000:
        k += 1
        term *= mu / k
        total += term
    return k


def _inverse_normal(q: float) -> float:
    """z with P(Z <= z) = q, by bisection (called only for quantiles other than the 95th)."""
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _normal_cdf(mid) < q else (lo, mid)
    return (lo + hi) / 2


def p_within(deadline_h: float, work_h: float, rate: float, loss_h: float) -> float:
    """The probability the run ends within `deadline_h` hours of wall time."""
    if deadline_h < work_h:
        return 0.0
    if rate <= 0 or loss_h <= 0:
        return 1.0
    allowed = math.floor((deadline_h - work_h) / loss_h)
    return poisson_cdf(allowed, rate * work_h)
