"""Output helpers shared by CLI commands: JSON for machines, rich tables for people, clean failures."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


class _LazyConsole:
    """A rich Console made on first use: a command that only prints JSON never imports rich."""

    def __init__(self, **options: Any) -> None:
        self._options: dict[str, Any] = options
        self._console: Console | None = None
        self._columns: str | None = None

    def _get(self) -> Console:
        # Rich reads COLUMNS once, when the Console is made: one made again when it changes keeps an in-process
        # caller (a test at 80 then 120 columns, an embedding shell) at the width it asked for.
        columns = os.environ.get("COLUMNS")
        if self._console is None or columns != self._columns:
            from rich.console import Console

            self._console = Console(**self._options)
            self._columns = columns
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)


def real_console(lazy: Console) -> Console:
    """The Console behind a lazy one, for rich objects that need the real thing (Progress, Live)."""
    return lazy._get() if isinstance(lazy, _LazyConsole) else lazy


# Text wraps at the terminal's width (words kept whole): a line longer than the terminal is one the user cannot read.
console: Console = _LazyConsole()  # type: ignore[assignment]  # behaves as the Console it makes
# An error stays one line (the README's promise, and what a script greps), however long.
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


def gpu_count(value: Any) -> str:
    """A node's GPU count as people write it: `8`, not `8.000`; a real fraction of a card as one (`1/6`)."""
    from fractions import Fraction

    number = Decimal(str(value))
    if number == number.to_integral_value():
        return str(int(number))
    fraction = Fraction(number).limit_denominator(16)
    if abs(Decimal(fraction.numerator) / Decimal(fraction.denominator) - number) < Decimal("0.001"):
        return f"{fraction.numerator}/{fraction.denominator}"
    return f"{number.normalize():f}"


WRAP_MIN = 24  # the narrowest a free-text column is wrapped to (`show_table`)


def _cell_width(cell: object) -> int:
    from rich.text import Text

    return Text.from_markup(cell).cell_len if isinstance(cell, str) else WRAP_MIN


def _needed_width(console_: Console, table: Table) -> int:
    """The narrowest this table prints with no cell cut: a wrapping column at its longest word (or its
    `min_width`), the rest whole."""
    options = console_.options.update_width(10_000)
    total = table._extra_width
    for column in table.columns:
        measured = table._measure_column(console_, options, column)
        total += measured.maximum if column.no_wrap else max(measured.minimum, column.min_width or 0)
    return total


def show_table(
    table: Table,
    *,
    drop: Iterable[str] = (),
    wrap: Iterable[str] = (),
    wide: bool = False,
    target: Console | None = None,
    more: str = "--wide shows every column",
) -> list[str]:
    """Print `table` at the terminal's width with no cell cut short: the columns named in `drop` leave, in that
    order, until the rest fit; those in `wrap` (free text) wrap at word boundaries; every other cell is printed
    whole. `wide` keeps every column and lets the table run past the terminal's edge. A line names the columns
    it hid, and `more` (how to see them); returns them."""
    from rich import box

    out = real_console(target or console)
    wrapping = set(wrap)
    # A left-justified caption is printed below the table by `_lines`: rich wraps it to the table's width
    # and pads every line of it with spaces to that width.
    caption = table.caption if table.caption_justify == "left" else None
    if caption is not None:
        table.caption = None
    table.box, table.pad_edge, table.show_edge = box.SIMPLE_HEAD, False, False
    for column in table.columns:
        column.no_wrap = str(column.header) not in wrapping
        column.overflow = "fold"
        if not column.no_wrap:
            # A short phrase ("no offers") stays on one line: a free-text column is narrowed only down to
            # WRAP_MIN characters, so an optional column leaves before a two-word note is broken in two.
            column.min_width = min(WRAP_MIN, max((_cell_width(c) for c in column._cells), default=0)) or None
    hidden: list[str] = []
    if wide:
        terminal = out.width
        out.width = max(terminal, _needed_width(out, table))  # print caps a width at the console's own
        try:
            out.print(table)
            _lines(out, caption, table.caption_style)
        finally:
            out.width = terminal
        return hidden
    for header in drop:
        if _needed_width(out, table) <= out.width:
            break
        index = next((i for i, c in enumerate(table.columns) if str(c.header) == header), None)
        if index is not None:
            del table.columns[index]
            for position, column in enumerate(table.columns):
                column._index = position  # rich pads the first and last column by position
            hidden.append(header)
    if _needed_width(out, table) > out.width:  # still too wide: every cell may wrap rather than be cut
        for column in table.columns:
            column.no_wrap = False
            # The narrowest-note preference yields too: at its WRAP_MIN a free-text column pushed the table
            # past the terminal, whose right edge then cut the note ("V100-PCIE-16GB (as" at 80 columns).
            column.min_width = None
    out.print(table)
    _lines(out, caption, table.caption_style)
    if hidden:
        note = f"hidden at {out.width} columns: {', '.join(hidden)}"
        # The hint on a line of its own when both would not fit: rich would break the phrase mid-way. A list of
        # hidden columns longer than the terminal wraps like a caption, with no line ending in a space.
        if len(note) + len(more) + 3 <= out.width:
            _lines(out, f"{note} ({more})", "dim")
        else:
            _lines(out, note, "dim")
            _lines(out, f"({more})", "dim")
    return hidden


def _lines(out: Console, content: object, style: object) -> None:
    """`content` (a caption, a note) as lines at the console's width, broken at spaces, none of them ending
    in spaces (rich pads a wrapped caption's lines to the table's width)."""
    from rich.text import Text

    if content is None:
        return
    text = content if isinstance(content, Text) else Text(str(content), style=str(style or "table.caption"))
    for line in text.wrap(out, out.width):
        line.rstrip()
        out.print(line)


def capped_note(shown: int, more: bool, flag: str = "--limit") -> str | None:
    """The line a list command prints when its limit stopped it short: the user should know there is more."""
    return f"[dim]showing the first {shown}; more match ({flag} N shows more)[/]" if more else None
