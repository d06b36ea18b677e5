"""`gpu-tracker index`: the open GPU price index (tracker.market.index; docs/index-methodology.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer

from tracker.cli.output import console, emit_json, fail, show_table

if TYPE_CHECKING:
    from tracker.market.index import IndexValue

commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("index")
def index(
    ctx: typer.Context,
    card: str | None = typer.Argument(None, help="A card family or card (every family when left out)."),
    days: int = typer.Option(7, "--days", min=1, max=3660, help="Complete UTC days, ending yesterday."),
    area: list[str] | None = typer.Option(None, "--area", help="global | us | eu | apac (repeatable; default all)."),
    version: str | None = typer.Option(None, "--version", help="Methodology version (default: the current one)."),
    fmt: str = typer.Option("table", "--format", help="table | csv | json"),
    wide: bool = typer.Option(False, "--wide", help="Every column, past the terminal's width if need be."),
) -> None:
    """A daily $/GPU-hour value per card family and area: on-demand, datacenter-hosted, live offers, each
    provider's weight capped, trimmed; published only with enough providers. Each value names its
    methodology version, the providers and offers it used, and its dispersion (p25-p75)."""
    from tracker.catalog.gpus import GpuNameError
    from tracker.cli.context import runtime
    from tracker.clock import utcnow
    from tracker.market.index import AREAS, CURRENT
    from tracker.market.index_source import index_csv, index_values
    from tracker.storage.engine import session_scope

    if fmt not in ("table", "csv", "json"):
        fail("--format must be table, csv or json")
    rt = runtime(ctx)
    try:
        with session_scope(rt.engine) as session:
            values = index_values(
                session, rt.settings, utcnow(), card=card, days=days, areas=area or AREAS, version=version or CURRENT
            )
    except GpuNameError as exc:
        fail(str(exc))
    except ValueError as exc:
        fail("--" + str(exc))  # the message starts with the option's name: "days must be …"
    if fmt == "json":
        emit_json([v.as_dict() for v in values])
        return
    if fmt == "csv":
        typer.echo(index_csv(values), nl=False)
        return
    _print(values, wide=wide)


def _print(values: Sequence[IndexValue], *, wide: bool) -> None:
    from rich.table import Table

    if not values:
        console.print("No offers of that card in the history: nothing to index.")
        return
    version = values[0].version
    table = Table(caption=f"{version}: $/GPU-hour; see docs/index-methodology.md")
    for col in ("day", "card", "area", "index", "p25-p75", "prov", "offers", "note"):
        table.add_column(col, justify="right" if col in ("index", "p25-p75", "prov", "offers") else "left")
    for v in values:
        if v.value is None:
            value, band = "-", "-"
        else:
            value, band = f"{v.value:.3f}", f"{v.p25:.2f}-{v.p75:.2f}"
        table.add_row(
            v.day.isoformat(), v.basket, v.area, value, band, str(len(v.providers)), str(v.offers), v.reason or ""
        )
    show_table(table, drop=("offers", "p25-p75", "note"), wrap=("note",), wide=wide)
