"""The `gpu-tracker` Typer application: every command, listed, and loaded only when it runs.

`COMMANDS` is the CLI's whole surface in one place: each command name and the module that defines
it. A module is imported when its command is invoked (or when help lists every command), so
`gpu-tracker cheapest` does not import the web framework, the scheduler or the alert channels; a
command-line call pays only for what it uses. `tests/tracker/cli/test_app.py` checks the list
against the modules.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer
from typer.core import TyperGroup

try:  # Typer 0.2x vendors its own click; older Typer uses click itself
    from typer._click import exceptions as parse_errors
except ImportError:  # pragma: no cover - depends on the installed Typer
    from click import exceptions as parse_errors  # type: ignore[no-redef]

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
    "index": ("index", "commands", False),
    "terms": ("terms", "commands", False),
    "availability": ("availability", "commands", False),
    "plan": ("plan", "commands", False),
    "alerts": ("alerts", "alerts_app", True),
    "worker": ("worker", "commands", False),
    "api": ("api_server", "commands", False),
    "mcp": ("mcp_server", "commands", False),
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
    else:
        # A module's Typer holds several commands: pick this one (a single-command Typer is the command).
        sub = getattr(command, "commands", None)
        command = sub[name] if sub is not None else command
    _one_paragraph_short_help(command)
    return command


def _one_paragraph_short_help(command: Any) -> None:
    """The command list shows each docstring's first paragraph; in Typer's rich mode its single line breaks
    are kept, so a docstring wrapped at the source's width breaks mid-sentence in the terminal's table.
    The first paragraph, joined into one line, lets rich wrap it at the terminal's width instead."""
    if getattr(command, "short_help", None) or not command.help:
        return
    first = command.help.strip().split("\n\n", 1)[0]
    command.short_help = " ".join(first.split())


class _LazyGroup(TyperGroup):
    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return load_command(cmd_name) if cmd_name in COMMANDS else None

    def main(  # type: ignore[override]
        self, args: Any = None, prog_name: str | None = None, *, standalone_mode: bool = True, **kwargs: Any
    ) -> Any:
        """Every CLI error is one line and a non-zero exit, the parser's own too (an unknown option, a bad
        value, a missing argument): click would print a usage box, which the README promises not to."""
        if not standalone_mode:
            return super().main(args, prog_name, standalone_mode=False, **kwargs)
        try:
            result = super().main(args, prog_name, standalone_mode=False, **kwargs)
        except getattr(parse_errors, "NoArgsIsHelpError", ()) as exc:
            exc.show()  # `gpu-tracker` alone (or a group alone) prints its help, as before
            sys.exit(exc.exit_code)
        except parse_errors.UsageError as exc:
            command = exc.ctx.command_path if exc.ctx is not None else "gpu-tracker"
            _one_line(f"{exc.format_message()} (see `{command} --help`)", exc.exit_code)
        except parse_errors.ClickException as exc:
            _one_line(exc.format_message(), exc.exit_code)
        except typer.Abort:
            _one_line("aborted", 1)
        sys.exit(result if isinstance(result, int) else 0)


def _one_line(message: str, code: int) -> None:
    text = " ".join(message.split())
    typer.echo(f"error: {text}", err=True)
    sys.exit(code)


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
