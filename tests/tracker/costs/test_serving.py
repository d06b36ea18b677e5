"""Spot serving's uptime (tracker.costs.serving): an interruption takes a replica away for its replacement,
the downloads and half a request served again; the share of hours serving is 1 / (1 + rate × down)."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from tracker.costs import resolve
from tracker.costs.serving import IMAGE_GB, REPLACE_S, down_hours, offer_uptime, uptime
from tracker.costs.terms import DEFAULT_SPOT_RATE


def test_down_time_is_replacement_downloads_and_half_a_request():
    # 16 GB of weights and the 10 GB image at 1 Gbit/s: 208 s; a 30 s request loses 15 s on average.
    got = down_hours(16.0, np.array([1000.0]), np.array([30.0]))
    assert got[0] == pytest.approx((REPLACE_S + (IMAGE_GB + 16.0) * 8.0 + 15.0) / 3600.0)
    slower = down_hours(16.0, np.array([100.0]), np.array([30.0]))
    assert slower[0] > got[0] * 3  # a tenth of the bandwidth: the download dominates


def test_uptime_is_one_without_interruptions_and_falls_with_the_rate():
    down = np.array([0.5, 0.5, 0.5, 0.5])
    got = uptime(np.array([0.0, 0.05, 0.5, np.nan]), down)
    assert got[0] == 1.0 and got[3] == 1.0  # on-demand (rate 0) and an unknown rate read as none
    assert got[1] == pytest.approx(1 / (1 + 0.025))
    assert got[2] == pytest.approx(1 / (1 + 0.25))
    assert got[2] < got[1] < got[0]


def test_no_bandwidth_means_the_replica_never_comes_back():
    down = down_hours(16.0, np.array([0.0]), np.array([1.0]))
    assert np.isinf(down[0])
    assert uptime(np.array([0.05]), down)[0] == 0.0


def test_one_offer_under_the_default_spot_terms():
    spot = resolve("", "spot")
    assert spot.number("interruptions_per_hour") == DEFAULT_SPOT_RATE
    share = offer_uptime(spot, 16.0, 30.0)
    down = (REPLACE_S + (IMAGE_GB + 16.0) * 8e3 / float(spot.number("download_mbps")) + 15.0) / 3600.0
    assert share == pytest.approx(1 / (1 + float(DEFAULT_SPOT_RATE) * down))
    assert offer_uptime(resolve("", "on_demand"), 16.0, 30.0) == 1.0
    assert Decimal(repr(share)) < 1
