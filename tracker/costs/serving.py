"""What interruptions cost a serving replica on spot: the share of its hours it serves.

A training run pays for interruptions in lost work and longer wall time (tracker.costs.spot). A serving
replica pays differently: while it is gone its traffic needs another replica, so what an interrupted
replica loses is uptime. Model: interruptions arrive as a Poisson process at `rate` per hour of service
(the offer's `interruptions_per_hour`, tracker.costs.terms: the provider's published rate, a host's
reliability, else the default spot rate); each takes the replica away for

    down = replace + (image + weights) / download bandwidth + in-flight / 2

* `replace`: a new machine allocated and booted and the engine started (CUDA graphs captured, warm-up):
  minutes on GPU clouds and marketplaces; REPLACE_S below;
* the container image and the model's weights downloaded again at the offer's `download_mbps` (a new
  machine has neither);
* the requests in flight are dropped and re-sent: on average each is half done, so half a request's
  life on the replica (prefill, queueing and its decode) is served twice.

Up periods average 1 / rate hours and each is followed by one down period (an alternating renewal
process), so the long-run share of hours serving is

    uptime = 1 / (1 + rate × down_h)

and a spot offer delivers its tokens/s × uptime: its $/Mtok divides by the uptime and a monthly load
needs ceil(load / (tokens/s × uptime)) copies. On-demand and reserved offers have rate 0: uptime 1.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tracker.costs.terms import CostTerms

__all__ = ["IMAGE_GB", "REPLACE_S", "down_hours", "offer_uptime", "uptime"]

# A new machine allocated and booted (1-3 minutes on GPU clouds; marketplaces similar once a host accepts)
# plus the engine's start before it serves: loading the weights from local disk, capturing CUDA graphs and
# warming up (vLLM and SGLang report 1-2 minutes for 7-70B models). Four minutes together.
REPLACE_S = 240.0
# The serving container image (vLLM's and SGLang's CUDA images are ~8-12 GB): the fine-tuning run's
# default image (tracker.estimate.job.JobInput.image_gb), here without a job to set it.
IMAGE_GB = 10.0

_BITS_PER_GB = 8e3  # megabits per GB (10^9 bytes)


def down_hours(
    weights_gb: float, download_mbps: npt.NDArray[np.float64], request_s: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Hours one interruption keeps a replica from serving (module docstring): replacement, downloads at the
    offer's bandwidth (a missing or zero bandwidth counts as none: the download never ends), and half of a
    request's life served again."""
    with np.errstate(divide="ignore", invalid="ignore"):
        download_s = np.where(download_mbps > 0, (IMAGE_GB + weights_gb) * _BITS_PER_GB / download_mbps, np.inf)
    in_flight_s = np.where(np.isfinite(request_s), request_s / 2.0, 0.0)
    out: npt.NDArray[np.float64] = (REPLACE_S + download_s + in_flight_s) / 3600.0
    return out


def uptime(rate: npt.NDArray[np.float64], down_h: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The long-run share of hours a replica serves at `rate` interruptions per hour, each `down_h` hours
    long: 1 where the rate is 0 (on-demand, reserved), towards 0 as rate × down grows."""
    rate = np.where(np.isfinite(rate) & (rate > 0), rate, 0.0)
    with np.errstate(invalid="ignore"):
        lost = np.where(rate > 0, rate * down_h, 0.0)
    out: npt.NDArray[np.float64] = 1.0 / (1.0 + lost)
    return out


def offer_uptime(terms: CostTerms, weights_gb: float, request_s: float) -> float:
    """One offer's uptime under its resolved terms (`uptime` for a single offer: an alert prices a card's
    statistic under the default terms of its pricing, which have no column to vectorise over)."""
    rate = np.array([float(terms.number("interruptions_per_hour"))])
    down = down_hours(weights_gb, np.array([float(terms.number("download_mbps"))]), np.array([request_s]))
    return float(uptime(rate, down)[0])
