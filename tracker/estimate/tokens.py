"""Token counts as people write them ("22.5M", "800K", "1.2B"): one parser for the training amount of a
fine-tuning job (tracker.estimate.job) and the monthly load of a serving job (tracker.estimate.serving.job)."""

from __future__ import annotations

import re

from tracker.estimate.errors import InvalidJob

_TOKENS_RE = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)
_TOKEN_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_tokens(value: str | float | int) -> float:
    """'22.5M' -> 22_500_000.0; also accepts plain numbers and K/B/T suffixes."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    m = _TOKENS_RE.match(str(value))
    if not m:
        raise InvalidJob(f"cannot read {value!r} as a token count (examples: 22.5M, 800K, 1.2B)", field="tokens")
    return float(m.group(1)) * _TOKEN_SCALE[m.group(2).lower()]
