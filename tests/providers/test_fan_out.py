"""Fan-out is deduplicated and capped in every adapter: a listing whose objects repeat (or that grows past
any real size) never multiplies the authenticated requests one fetch sends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from providers.cassette import Cassette, bundled_cassette
from providers.contract import ProviderError, ProviderKind
from providers.http import MAX_FAN_OUT, fan_out
from providers.registry import PROVIDERS
from tests.factories.cassettes import SpyTransport, fetch_recording, replay_credentials

REPEAT = 40
ADAPTERS = [p for p in PROVIDERS if p.kind != ProviderKind.static_sheet and bundled_cassette(p.name).exists()]


def _repeat_lists(node: Any) -> Any:
    """Every list of objects in a body with each object repeated REPEAT times."""
    if isinstance(node, dict):
        return {k: _repeat_lists(v) for k, v in node.items()}
    if isinstance(node, list):
        items = [_repeat_lists(v) for v in node]
        return [x for x in items for _ in range(REPEAT)] if items and all(isinstance(x, dict) for x in items) else items
    return node


def _requests(provider, cassette: Cassette) -> int | None:
    class Counting(SpyTransport):
        pass

    try:
        _, sent = fetch_recording(provider, replay_credentials(provider), cassette, transport=Counting)
    except ProviderError:
        return None  # refused (e.g. past the cap): no fan-out happened beyond what it sent before failing
    return len(sent)


@pytest.mark.parametrize("provider", ADAPTERS, ids=[p.name for p in ADAPTERS])
def test_repeated_listings_send_no_more_requests(provider):
    raw = json.loads(bundled_cassette(provider.name).read_text())
    baseline = _requests(provider, Cassette.from_json(raw))
    assert baseline is not None
    for interaction in raw["interactions"]:
        if "json" in interaction["response"]:
            interaction["response"]["json"] = _repeat_lists(interaction["response"]["json"])
    inflated = _requests(provider, Cassette.from_json(raw))
    # Mithril used to send one pricing request per listed type: 40× the types, 40× the requests.
    assert inflated is None or inflated <= baseline, f"{baseline} requests became {inflated}"


def test_fan_out_dedupes_in_order_and_refuses_past_the_cap():
    assert fan_out(["b", "a", "b", "c", "a"], "types") == ["b", "a", "c"]
    with pytest.raises(ProviderError, match=f"at most {MAX_FAN_OUT}"):
        fan_out([str(i) for i in range(MAX_FAN_OUT + 1)], "instance types")
