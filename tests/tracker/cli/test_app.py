"""The CLI's command list is the whole surface, and a command loads only what it runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import typer

from tracker.cli import root as cli_app


def test_every_listed_command_loads_and_every_defined_command_is_listed():
    defined: set[str] = set()
    for module_name, attribute, is_group in set(cli_app.COMMANDS.values()):
        module = __import__(f"tracker.cli.{module_name}", fromlist=[attribute])
        command = typer.main.get_command(getattr(module, attribute))
        if is_group:
            defined.add(next(n for n, v in cli_app.COMMANDS.items() if v == (module_name, attribute, True)))
        else:
            defined |= set(getattr(command, "commands", {}) or {command.name: command})
    assert defined == set(cli_app.COMMANDS)
    for name in cli_app.COMMANDS:
        assert cli_app.load_command(name) is not None


HEAVY = ("fastapi", "starlette", "uvicorn", "pandas", "apscheduler", "apprise", "alembic", "prometheus_client")


def test_cheapest_imports_no_web_framework_scheduler_or_pandas(tmp_path):
    """`cheapest` on the embedded default: what it imports is what it needs, nothing that serves HTTP."""
    code = (
        "import sys, json\n"
        "from tracker.cli import main\n"
        "sys.argv = ['gpu-tracker', 'cheapest', '--model', 'llama-3.1-8b', '--method', 'qlora', '--tokens', '22.5M',"
        " '--json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)), file=sys.stderr)\n"
    )
    # The session's private cache (conftest), not the user's: the estimate keeps its fit there.
    env = {"TRACKER_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert first.returncode == 0, first.stderr  # creates and migrates the embedded database (Alembic)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []  # no live offers yet: an empty ranking
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []


def test_the_command_list_shows_each_first_paragraph_as_one_line():
    """Typer's rich help keeps a docstring's single line breaks in the command table, which broke
    `cheapest`'s description mid-sentence at any width; every command's short help is one line of prose."""
    for name in cli_app.COMMANDS:
        command = cli_app.load_command(name)
        first = (command.help or "").strip().split("\n\n", 1)[0]
        assert command.short_help == " ".join(first.split()), name
        assert "\n" not in command.short_help, name
