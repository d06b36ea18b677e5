"""The `gpu-tracker` Typer application and the options every command shares."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="gpu-tracker",
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
