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


def _register() -> None:
    """Every command group, listed: the CLI's whole surface is visible here, and nothing registers
    itself by being imported."""
    from tracker.cli import alerts, api_server, db, estimate, gpus, market, offers, scrape, serve, worker

    for module in (api_server, estimate, gpus, market, offers, scrape, serve, worker):
        app.add_typer(module.commands)
    app.add_typer(db.db_app, name="db")
    app.add_typer(alerts.alerts_app, name="alerts")


_register()
