"""The mix file: the issue's minimal form as written, YAML and JSON, the published schema, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracker.plan.mix import MixError, load_mix, plan_schema

ROOT = Path(__file__).resolve().parents[3]
MINIMAL = """\
workloads:
  - name: small-finetune
    kind: fine-tune
    job: {model: llama-3.1-8b, method: qlora, tokens: 22.5M}
    volume: {runs_per_month: 20}
  - name: big-serving
    kind: inference
    job: {model: llama-3.1-70b, precision: fp8, prompt_tokens: 1000, output_tokens: 200, concurrency: 64}
    volume: {tokens_per_month: 5B}
"""


def test_the_issues_minimal_form_works_as_written():
    mix = load_mix(MINIMAL, "mix.yaml")
    small, big = mix.workloads
    assert (small.name, small.kind, small.volume.runs_per_month) == ("small-finetune", "fine-tune", 20)
    assert small.job_input().spec().tokens == 22_500_000
    assert big.kind == "inference" and big.volume.tokens_per_month == 5e9
    assert big.job["precision"] == "fp8" and big.constraints.allowed_pricing(serving=True) == ["on_demand"]


def test_json_is_read_too_and_gives_the_same_mix():
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information

    as_json = json.dumps(yaml.safe_load(MINIMAL))
    assert load_mix(as_json, "mix.json") == load_mix(MINIMAL)


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "examples").glob("*.yaml")))
def test_example_mixes_load(name):
    mix = load_mix((ROOT / "examples" / name).read_text(), name)
    assert mix.workloads


def _bad(text: str) -> MixError:
    with pytest.raises(MixError) as info:
        load_mix(text)
    return info.value


@pytest.mark.parametrize(
    ("edit", "field", "words"),
    [
        (("runs_per_month: 20", "runs_per_month: -1"), "workloads[0].volume.runs_per_month", "greater than 0"),
        (("runs_per_month: 20", "runz: 20"), "workloads[0].volume.runz", "Extra inputs"),
        (("kind: fine-tune", "kind: training"), "workloads[0].kind", "fine-tune"),
        (("method: qlora", "method: dpo"), "workloads[0].job.method", "full"),
        (("llama-3.1-8b", "no-such-model"), "workloads[0].job.model", "unknown model"),
        (("tokens: 22.5M", "tokens: lots"), "workloads[0].job.tokens", "token count"),
        (("tokens_per_month: 5B", "tokens_per_month: many"), "workloads[1].volume.tokens_per_month", "amount"),
        (("{runs_per_month: 20}", "{runs_per_month: 20, tokens_per_month: 1B}"), "workloads[0].volume", "exactly one"),
        (("{runs_per_month: 20}", "{tokens_per_month: 1B}"), "workloads[0]", "runs_per_month"),
    ],
)
def test_bad_files_name_the_workload_and_the_field(edit, field, words):
    err = _bad(MINIMAL.replace(*edit))
    assert err.field == field
    assert words in err.message
    index = int(field.split("[")[1].split("]")[0])
    name = ["small-finetune", "big-serving"][index]
    assert err.workload == name and err.message.startswith(f"workload {name!r} ({field})")
    assert "\n" not in err.message


def test_duplicate_names_and_malformed_text():
    assert "used twice" in _bad(MINIMAL.replace("big-serving", "small-finetune")).message
    assert "not valid YAML" in _bad("workloads: [\n  - name: x\n").message
    assert "not valid JSON" in load_error('{"workloads": [}', "mix.json")
    assert "mapping" in _bad("- just\n- a list\n").message
    assert _bad("workloads: []\n").field == "workloads"


def load_error(text: str, filename: str) -> str:
    with pytest.raises(MixError) as info:
        load_mix(text, filename)
    return info.value.message


def test_yaml_tags_never_build_objects():
    err = _bad("workloads: !!python/object/apply:os.system ['true']\n")
    assert "not valid YAML" in err.message


def test_schema_is_published_with_the_job_schema():
    schema = plan_schema()
    assert schema["title"] == "gpu-tracker workload mix"
    assert {"workloads", "power_budget_kw", "overhead_factor"} <= set(schema["properties"])
    workload = schema["$defs"]["Workload"]["properties"]
    assert workload["kind"]["enum"] == ["fine-tune", "pretrain", "inference", "batch-inference"]
    assert {"$ref": "#/$defs/JobInput"} in workload["job"]["anyOf"]
    assert "tokens" in schema["$defs"]["JobInput"]["properties"]
    json.dumps(schema)  # plain JSON


def test_a_serving_job_states_its_load_only_in_the_volume():
    err = _bad(MINIMAL.replace("concurrency: 64}", "concurrency: 64, tokens_per_month: 1B}"))
    assert err.field == "workloads[1].job" and "volume" in err.message
    err = _bad(MINIMAL.replace("precision: fp8,", "kind: fine-tune, precision: fp8,"))
    assert err.field == "workloads[1].job" and "contradicts" in err.message
    err = _bad(MINIMAL.replace("concurrency: 64", "concurrency: 64, method: full"))
    assert err.field == "workloads[1].job.method" and err.workload == "big-serving"


def test_deeply_nested_json_is_a_mix_error():
    err = _bad("[" * 5000 + "]" * 5000)
    assert err.field == "mix" and "nests too deeply" in err.message


@pytest.mark.parametrize(
    ("volume", "field"),
    [
        ("{tokens_per_month: 1e30}", "workloads[1].volume.tokens_per_month"),
        ("{tokens_per_month: 1e19}", "workloads[1].volume.tokens_per_month"),
    ],
)
def test_a_served_volume_past_the_serving_cap_is_refused(volume, field):
    err = _bad(MINIMAL.replace("{tokens_per_month: 5B}", volume))
    assert err.field == field and "at most 1e+18" in err.message


def test_training_tokens_that_make_more_runs_than_the_cap_are_refused():
    text = MINIMAL.replace("{runs_per_month: 20}", "{training_tokens_per_month: 1e17}")
    err = _bad(text)  # 22.5M tokens a run: 4.4e9 runs a month
    assert err.field == "workloads[0].volume.training_tokens_per_month" and "at most 1e+06" in err.message
    load_mix(MINIMAL.replace("{runs_per_month: 20}", "{training_tokens_per_month: 2.25e13}"))  # 1e6 runs: kept
