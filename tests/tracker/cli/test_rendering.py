"""Every view a new user opens reads right at 80 and 120 columns: after `scrape --demo`, each command's
default output has no line longer than the terminal, no cell cut short (rich's "…") and no parenthesis
broken across lines (a note wrapped mid-phrase), GPU counts are
whole numbers, and a list stopped by its limit says so. `--wide` shows every column."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from providers.cassette import bundled_cassette

ROOT = Path(__file__).resolve().parents[3]
JOB = ("--model", "llama-3.1-8b", "--method", "qlora", "--tokens", "22.5M")
COMMANDS = [
    ("offers",),
    ("offers", "--gpu", "H100", "--limit", "5"),
    ("cheapest", *JOB),
    ("cheapest", "--kind", "inference", "--model", "llama-3.1-8b"),
    ("providers",),
    ("estimate", *JOB),
    ("estimate", "--kind", "inference", "--model", "llama-3.1-8b"),
    ("calibrate",),
    ("plan", str(ROOT / "examples" / "mixed-fleet.yaml")),
    ("availability", "H100"),
    ("history", "H100"),
    ("terms", "H100"),
    ("terms", "H100", "--days", "7"),
    ("gpus",),
    ("doctor", "vastai", "--replay", str(bundled_cassette("vastai"))),
    ("scrape", "--demo", "seeweb", "vastai", "spheron", "--dry-run"),
    # Every demo provider: the notes of assumed cards once pushed the table past 80 columns, whose edge cut them.
    ("scrape", "--demo", "--dry-run"),
    ("alerts", "list"),
]


# Prose that wraps by design (a source's citation runs several lines): a parenthesis may span lines there.
PROSE = {"calibrate"}


def _problems(output: str, width: int, prose: bool = False) -> list[str]:
    out = []
    for line in output.splitlines():
        if len(line) > width:
            out.append(f"{len(line)} > {width}: {line[:100]}")
        if "…" in line:
            out.append(f"cut: {line[:100]}")
        if not prose and line.count("(") != line.count(")"):  # a note wrapped mid-phrase, or a cell wrapped mid-value
            out.append(f"a parenthesis broken across lines: {line[:100]}")
    return out


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
@pytest.mark.parametrize("width", [80, 120])
def test_every_first_hour_command_fits_the_terminal(cli, monkeypatch, width):
    assert cli("scrape", "--demo", "--json").exit_code == 0
    monkeypatch.setenv("COLUMNS", str(width))
    problems = {}
    for args in COMMANDS:
        result = cli(*args)
        assert result.exit_code in (0, 1), (args, result.output)  # doctor/scrape exit 1 on a finding
        assert result.output.strip(), args
        if found := _problems(result.output, width, prose=args[0] in PROSE):
            problems[" ".join(args)] = found[:3]
    assert not problems, problems


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_counts_limits_and_wide(cli, monkeypatch):
    assert cli("scrape", "--demo", "--json").exit_code == 0
    monkeypatch.setenv("COLUMNS", "80")
    offers = cli("offers", "--limit", "30")
    assert offers.exit_code == 0, offers.output
    # GPU counts print as people write them: no "8.000".
    assert not re.search(r"\s\d+\.000\s", offers.output), offers.output
    assert "showing the first 30; more match (--limit N shows more)" in " ".join(offers.output.split())
    everything = cli("offers", "--limit", "100000")
    assert "showing the first" not in everything.output
    default = cli("offers", "--limit", "5")
    wide = cli("offers", "--limit", "5", "--wide")
    assert "hidden at 80 columns" in default.output and "--wide" in default.output
    header = next(line for line in wide.output.splitlines() if "provider" in line)
    assert all(col in header for col in ("region", "$/h", "seen"))
    assert max(len(line) for line in wide.output.splitlines()) > 80  # wide runs past the terminal, uncut
    assert "…" not in wide.output


def test_gpu_count_reads_as_people_write_it():
    from decimal import Decimal

    from tracker.cli.output import gpu_count

    assert [gpu_count(v) for v in (Decimal("8.000"), 8.0, Decimal("0.1667"), Decimal("0.5"), Decimal("1.25"))] == [
        "8",
        "8",
        "1/6",
        "1/2",
        "5/4",
    ]
    assert gpu_count(Decimal("0.3183")) == "0.3183"


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
@pytest.mark.parametrize("extra", [(), ("--pricing", "spot"), ("--wide",)])
def test_a_left_caption_wraps_at_the_terminal_without_trailing_spaces(cli, monkeypatch, extra):
    # The serving table's legend: rich wrapped it to the table's width and padded each of its lines with
    # spaces to that width; it is printed below the table at the terminal's width instead, and so is the
    # hint naming the hidden columns.
    assert cli("scrape", "--demo", "--json").exit_code == 0
    monkeypatch.setenv("COLUMNS", "80")
    result = cli("cheapest", "--kind", "inference", "--model", "llama-3.1-8b", *extra)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("layout: replicas x tensor parallel"))
    legend = []
    for line in lines[start:]:
        if line.startswith("hidden at") or not line.strip():
            break
        legend.append(line)
    assert all(not line.endswith(" ") for line in legend), legend
    assert " ".join(legend).startswith("layout: replicas x tensor parallel; $/Mtok: the whole price over output tokens")
    if "--wide" not in extra:
        assert all(len(line) <= 80 for line in legend), legend
        # The hidden-columns hint under it wraps the same way (with spot it is longer than the terminal).
        hint = lines[start + len(legend) :]
        assert hint and hint[0].startswith("hidden at 80 columns:"), hint
        assert all(not line.endswith(" ") and len(line) <= 80 for line in hint), hint
