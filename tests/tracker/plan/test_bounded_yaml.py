"""Mix text is untrusted (POST /v1/plan takes it without a token): aliases are budgeted while parsing, a
self-referring alias and a repeated key are refused, and every refusal is a MixError naming `mix`."""

from __future__ import annotations

import json
import time

import pytest

from tracker.plan.bounded_yaml import MAX_NODES
from tracker.plan.mix import MixError, load_mix, parse_source


def alias_bomb(levels: int, where: str = "job") -> str:
    """~40 bytes a level; level n expands to 10^n scalars."""
    anchors = ['  a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    anchors += [f"  a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    bomb = f"*a{levels - 1}"
    return (
        "x:\n" + "\n".join(anchors) + "\nworkloads:\n- name: w\n  kind: fine-tune\n"
        f"  job: {{model: llama-3.1-8b, tokens: 10M, bomb: {bomb}}}\n  volume: {{runs_per_month: 1}}\n"
    )


@pytest.mark.parametrize("levels", [5, 7, 9, 12])
def test_an_alias_bomb_is_refused_while_parsing_in_milliseconds(levels):
    text = alias_bomb(levels)
    assert len(text) < 800
    start = time.perf_counter()
    with pytest.raises(MixError) as caught:
        load_mix(text)
    elapsed = time.perf_counter() - start
    assert caught.value.field == "mix"
    assert "expands" in caught.value.message and f"{MAX_NODES:,}" in caught.value.message
    # The budget is charged per alias as composed: refusing 10^12 costs what refusing 10^5 does.
    assert elapsed < 0.5, f"{elapsed:.2f}s to refuse a {levels}-level bomb"


def test_a_merge_key_bomb_is_refused_too():
    lines = ["a0: &a0 {" + ", ".join(f"k{j}: v" for j in range(10)) + "}"]
    lines += [f"a{i}: &a{i} {{<<: [" + ", ".join([f"*a{i - 1}"] * 10) + "]}" for i in range(1, 9)]
    with pytest.raises(MixError, match="expands"):
        parse_source("\n".join(lines) + "\n")


def test_ordinary_aliases_within_the_budget_still_work():
    text = "defaults: &job {model: llama-3.1-8b, tokens: 10M}\nworkloads:\n" + "".join(
        f"- {{name: w{i}, kind: fine-tune, job: *job, volume: {{runs_per_month: 1}}}}\n" for i in range(50)
    )
    data = parse_source(text)
    assert isinstance(data, dict) and len(data["workloads"]) == 50


def test_a_self_referring_alias_is_refused():
    with pytest.raises(MixError, match="refers to itself"):
        parse_source("a: &a [1, *a]\n")


@pytest.mark.parametrize(
    ("text", "filename"),
    [
        ("workloads: []\nworkloads: [1]\n", "mix.yaml"),
        ("a: {k: 1, k: 2}\n", ""),
        (json.dumps({"workloads": []})[:-1] + ', "workloads": [1]}', "mix.json"),
        ('{"a": {"k": 1, "k": 2}}', ""),
    ],
)
def test_a_repeated_key_is_refused_not_silently_overwritten(text, filename):
    with pytest.raises(MixError, match="duplicate key") as caught:
        parse_source(text, filename)
    assert caught.value.field == "mix"


def test_a_merge_may_still_be_overridden_by_an_explicit_key():
    assert parse_source("b: &b {x: 1, y: 2}\nc: {<<: *b, x: 3}\n") == {"b": {"x": 1, "y": 2}, "c": {"x": 3, "y": 2}}
