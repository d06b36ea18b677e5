"""Per-user tokens/s below one is shown to three significant digits, never rounded to a misleading 0.0."""

from __future__ import annotations

import pytest

from tracker.estimate.serving.model import per_user_rate


@pytest.mark.parametrize(
    ("raw", "shown"),
    [(42.123, 42.12), (1.0, 1.0), (0.98765, 0.988), (0.004731, 0.00473), (1.234e-7, 1.23e-7), (0.0, 0.0)],
)
def test_per_user_rate(raw, shown):
    assert per_user_rate(raw) == shown


def test_65536_users_on_one_node_get_a_nonzero_rate():
    # What used to be reported as 0.0: a node's 310 tokens/s shared by 65,536 users (round(x, 2) == 0.0).
    shared = 310 / 65_536
    assert round(shared, 2) == 0.0
    assert per_user_rate(shared) == pytest.approx(0.00473, rel=1e-3) and per_user_rate(shared) > 0
