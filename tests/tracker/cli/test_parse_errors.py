"""Every CLI error is one line and a non-zero exit, the option parser's own included (an unknown option,
a bad value, a missing argument, an unknown command): never click's usage box."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracker.cli.root import app

BAD = [
    (["--bogus"], "No such option: --bogus"),
    (["offers", "--limit", "abc"], "Invalid value for '--limit'"),
    (["nosuch"], "No such command 'nosuch'"),
    (["estimate", "--model"], "Option '--model' requires an argument"),
    (["alerts", "add", "--bogus", "1"], "No such option: --bogus"),
    (["history"], "Missing argument"),
]


@pytest.mark.parametrize(("args", "says"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_parse_error_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and says in lines[0]
    assert "Usage:" not in result.output and "╭" not in result.output


def test_the_installed_command_says_the_same(tmp_path) -> None:
    """Through the console script's `main()`, in a real process, as a user meets it."""
    script = Path(sys.executable).with_name("gpu-tracker")  # the console script `pip install` made
    proc = subprocess.run(
        [str(script), "offers", "--limit", "abc"], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: Invalid value for '--limit': Input should be a valid integer, unable to parse string as an integer"
        " (see `gpu-tracker offers --help`)"
    ]


def test_help_still_prints_help() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0 and "Usage:" in result.output
