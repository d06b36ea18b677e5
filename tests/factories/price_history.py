"""Real third-party price histories, read from `../shared/price-history/` at test time (never copied into
the project; that folder's README gives each one's source and licence). Missing outside CI: the test is
skipped with the reason; with CI=true it fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "price-history"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def price_history_dir(name: str) -> Path:
    path = ROOT / name
    if not path.is_dir():
        message = f"price history {name} not found under {ROOT} (shared/price-history is not laid out here)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return path
