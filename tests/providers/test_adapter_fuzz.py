"""Fuzz every adapter with one malformed object at a time: a field of one object in a list of its bundled
cassette is changed to a hostile value (seeded, bounded in count and time). The rule every list-shaped
adapter follows (`providers.parsing.dropping`): that object is dropped with its reason, the rest of the
batch goes on; only a malformed envelope fails the run. So: no whole-provider failure, ever, from this.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

import pytest

from providers.cassette import Cassette, CassetteMiss, bundled_cassette
from providers.contract import ProviderError, ProviderKind
from providers.registry import PROVIDERS
from tests.factories.cassettes import replay

SEED = 20261201
MUTATIONS_PER_ADAPTER = 24
SECONDS_PER_ADAPTER = 20.0
HOSTILE: list[Any] = ["", None, "NaN", float("nan"), -1, 0, "x" * 300, [], {}, True, 1e30, "１２", "-", {"a": 1}]

# Adapters that parse their answer as it streams in (providers.http.stream_json_items): like every strict
# JSON parser, it refuses the NaN token Python's json module accepts, so that answer fails as invalid JSON.
STREAMED_JSON = {"vastai"}
ADAPTERS = [p for p in PROVIDERS if p.kind != ProviderKind.static_sheet and bundled_cassette(p.name).exists()]


def _objects_in_lists(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every object that is an element of a list (the offers, hosts, plans ... of a body)."""
    out: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            out.extend(_objects_in_lists(value, (*path, key)))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            if isinstance(item, dict) and item:
                out.append((*path, i))
            out.extend(_objects_in_lists(item, (*path, i)))
    return out


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        node = node[key]
    return node


def mutations(raw: dict[str, Any], rng: random.Random, count: int) -> list[tuple[int, tuple[Any, ...], str, Any]]:
    """(interaction, object path, key, value) for `count` single-field changes of objects in lists."""
    targets = [
        (i, path)
        for i, interaction in enumerate(raw["interactions"])
        if isinstance(body := interaction["response"].get("json"), dict | list)
        for path in _objects_in_lists(body)
    ]
    if not targets:
        return []
    out = []
    for _ in range(count):
        i, path = rng.choice(targets)
        obj = _at(raw["interactions"][i]["response"]["json"], path)
        key = rng.choice(sorted(obj))
        out.append((i, path, key, rng.choice(HOSTILE)))
    return out


@pytest.mark.parametrize("provider", ADAPTERS, ids=[p.name for p in ADAPTERS])
def test_one_malformed_object_never_fails_the_whole_provider(provider):
    original = json.loads(bundled_cassette(provider.name).read_text())
    rng = random.Random(f"{SEED}:{provider.name}")
    failures: list[str] = []
    deadline = time.monotonic() + SECONDS_PER_ADAPTER
    for i, path, key, value in mutations(original, rng, MUTATIONS_PER_ADAPTER):
        if time.monotonic() > deadline:
            break
        raw = json.loads(json.dumps(original))
        _at(raw["interactions"][i]["response"]["json"], path)[key] = value
        try:
            replay(provider, Cassette.from_json(raw))
        except CassetteMiss:
            continue  # the field named a request (a page cursor, a type to fan out to): not a parse failure
        except ProviderError as exc:
            if "no recorded response" in str(exc):
                continue
            if provider.name in STREAMED_JSON and value != value and "invalid JSON" in str(exc):
                continue  # NaN is not JSON (RFC 8259); a streaming parser refuses it, the whole answer said so
            failures.append(f"{'/'.join(map(str, path))}.{key} = {value!r:.40}: {exc}")
        except Exception as exc:  # a crash is worse than a failure
            failures.append(f"{'/'.join(map(str, path))}.{key} = {value!r:.40}: CRASH {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures[:10])
