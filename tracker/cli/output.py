"""Output helpers shared by CLI commands: JSON for machines, rich tables for people, clean failures."""

from __future__ import annotations

import json
import sys
from datetime import date, datetime
from decimal import Decimal
from typing import Any, NoReturn

import typer
from rich.console import Console

console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


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
