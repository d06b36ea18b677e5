"""Output helpers shared by CLI commands: JSON for machines, rich tables for people, clean failures."""

from __future__ import annotations

import json
import sys
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from rich.console import Console


class _LazyConsole:
    """A rich Console made on first use: a command that only prints JSON never imports rich."""

    def __init__(self, **options: Any) -> None:
        self._options: dict[str, Any] = options
        self._console: Console | None = None

    def _get(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)


def real_console(lazy: Console) -> Console:
    """The Console behind a lazy one, for rich objects that need the real thing (Progress, Live)."""
    return lazy._get() if isinstance(lazy, _LazyConsole) else lazy


console: Console = _LazyConsole(soft_wrap=True)  # type: ignore[assignment]  # behaves as the Console it makes
err_console: Console = _LazyConsole(stderr=True, soft_wrap=True)  # type: ignore[assignment]


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        # Money stays exact in storage; JSON consumers get a number.
        return float(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def emit_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, default=_default, indent=2) + "\n")


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a clear error and exit non-zero; never a traceback for bad input."""
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)
