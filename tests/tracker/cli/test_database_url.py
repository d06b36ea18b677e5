"""A database URL the CLI cannot use is one line on stderr and exit 2, never a traceback (issue #18)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import tracker.cli  # noqa: F401  (registers every command)
from tracker.cli.root import app
from tracker.config import get_settings

BAD_URLS = [
    ("postgresql+psycopg://tracker:hunter2@db:port/tracker", "not a valid database URL"),  # a bad port
    ("postgresql+psycopg://tracker:hunter2@[::1/tracker", "not a valid database URL"),
    ("not a url", "not a valid database URL"),
    ("mysql://tracker:hunter2@db/tracker", "driver that is not installed"),
]


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACKER_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


@pytest.mark.parametrize(("url", "says"), BAD_URLS)
@pytest.mark.parametrize("given", ["env", "option"])
def test_a_bad_database_url_is_one_line_and_exit_2(env, url, says, given):
    if given == "env":
        env.setenv("TRACKER_DATABASE_URL", url)
        get_settings.cache_clear()
        args = ["offers"]
    else:
        args = ["--database-url", url, "offers"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit)  # typer.Exit from `fail`, not an escaped error
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.output
    assert ("TRACKER_DATABASE_URL" if given == "env" else "--database-url") in lines[0]
    assert "hunter2" not in result.output and "Traceback" not in result.output
