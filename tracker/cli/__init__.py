"""Command-line interface: the `gpu-tracker` Typer app (`tracker.cli.app` lists every command group)."""

from __future__ import annotations

from tracker.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
