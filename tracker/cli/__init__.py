"""Command-line interface. Each submodule registers its commands on the shared Typer app."""

from __future__ import annotations

import importlib
import pkgutil

from tracker.cli.app import app

_SUPPORT = {"app", "context", "output"}

# Every other module in this package registers commands on `app` when imported.
for _module in pkgutil.iter_modules(__path__):
    if _module.name not in _SUPPORT and not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")


def main() -> None:
    app()


__all__ = ["app", "main"]
