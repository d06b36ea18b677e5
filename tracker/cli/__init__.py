"""Command-line interface: the `gpu-tracker` Typer app (`tracker.cli.root` lists every command group)."""

from __future__ import annotations

from tracker.cli.root import app


def main() -> None:
    app()


__all__ = ["app", "main"]
