"""The `gpu-tracker` Typer application: every command, listed, and loaded only when it runs.

`COMMANDS` is the CLI's whole surface in one place: each command name and the module that defines
it. A module is imported when its command is invoked (or when help lists every command), so
`gpu-tracker cheapest` does not import the web framework, the scheduler or the alert channels; a
command-line call pays only for what it uses. `tests/tracker/cli/test_app.py` checks the list
against the modules.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
from typer.core import TyperGroup

# command name → (module in tracker.cli, its Typer object, whether that object is a named group)
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "scrape": ("scrape", "commands", False),
    "providers": ("scrape", "commands", False),
    "record": ("scrape", "commands", False),
    "offers": ("offers", "commands", False),
    "gpus": ("gpus", "commands", False),
    "estimate": ("estimate", "commands", False),
    "calibrate": ("estimate", "commands", False),
    "cheapest": ("market", "commands", False),
    "history": ("market", "commands", False),
    "availability": ("availability", "commands", False),
    "plan": ("plan", "commands", False),
    "alerts": ("alerts", "alerts_app", True),
    "worker": ("worker", "commands", False),
    "api": ("api_server", "commands", False),
    "up": ("serve", "commands", False),
    "db": ("db", "db_app", True),
    "fx": ("fx", "fx_app", True),
    "doctor": ("doctor", "commands", False),
    "export": ("export", "commands", False),
    "import": ("history_import", "import_app", True),
}


def load_command(name: str) -> Any:
    """The click command behind `name`, importing its module now."""
    module_name, attribute, is_group = COMMANDS[name]
    module = importlib.import_module(f"tracker.cli.{module_name}")
    command = typer.main.get_command(getattr(module, attribute))
    if is_group:
        command.name = name
        return command
    # A module's Typer holds several commands: pick this one (a single-command Typer is the command).
    sub = getattr(command, "commands", None)
    return sub[name] if sub is not None else command


class _LazyGroup(TyperGroup):
    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return load_command(cmd_name) if cmd_name in COMMANDS else None


app = typer.Typer(
    name="gpu-tracker",
    cls=_LazyGroup,
    help="Which GPU, from which provider, is cheapest for this fine-tuning job today — and how has that changed?",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root(
    ctx: typer.Context,
    database_url: str | None = typer.Option(
        None, "--database-url", envvar=None, help="Override TRACKER_DATABASE_URL for this command."
    ),
) -> None:
    ctx.obj = {"database_url": database_url}
