"""Responses providers' live APIs really returned to third parties, read from `../shared/real-payloads/`
at test time (never copied into the project; see that folder's README for each file's source).

Outside CI a missing folder skips the test with the reason; with CI=true it fails, so a green CI run
always means the parsers were held to the real shapes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "real-payloads"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def real_payload_path(relative: str) -> Path:
    path = ROOT / relative
    if not path.is_file():
        message = f"real payload {relative} not found under {ROOT} (shared/real-payloads is not laid out here)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return path


def real_payload(relative: str) -> Any:
    """The decoded JSON of `relative` (e.g. "vastai/vast-cli_11ecdfa_search_trimmed.json")."""
    return json.loads(real_payload_path(relative).read_text())
