"""The job options of every command that takes a fine-tuning job, generated from the one job schema.

`with_job` adds one Typer option per field of `tracker.estimate.JobInput` (`seq_len` → `--seq-len`,
its description as the help, its default as the default) to a command, and hands the command a
validated `JobInput` as its `job` parameter. A field added to the schema is therefore an option of
`estimate` and `cheapest` without touching either; only how a field is spelled on a command line
(short flags, which fields a shell cannot take) is decided here.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar, get_args, get_origin

import typer

from tracker.cli.output import fail
from tracker.estimate.job import JobInput

__all__ = ["JOB_OPTION_NAMES", "build_job", "cli_type", "with_job"]

# An inline config.json cannot be typed on a command line; `--model` takes a path to one instead.
_NOT_ON_THE_COMMAND_LINE = frozenset({"hf_config"})
_SHORT_FLAGS = {"model": "-m", "assumptions": "-a"}
_REQUIRED_ON_THE_COMMAND_LINE = frozenset({"model"})  # the API may send hf_config instead

JOB_OPTION_NAMES: tuple[str, ...] = tuple(n for n in JobInput.model_fields if n not in _NOT_ON_THE_COMMAND_LINE)

F = TypeVar("F", bound=Callable[..., Any])


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def cli_type(annotation: Any) -> Any:
    """The type a command-line parser should read for a schema annotation: unions with `str` are read
    as text (the schema parses "22.5M" and "q,v,o" itself), Literals as text checked by the schema."""
    if get_origin(annotation) is Literal:
        return str
    if get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(members) < len(get_args(annotation))
        base = str if str in members or len(members) != 1 else cli_type(members[0])
        return base | None if optional else base
    return annotation


def _parameters() -> list[inspect.Parameter]:
    params = []
    for name in JOB_OPTION_NAMES:
        info = JobInput.model_fields[name]
        kind = cli_type(info.annotation)
        decls = [_flag(name), *([_SHORT_FLAGS[name]] if name in _SHORT_FLAGS else [])]
        if kind is bool:
            decls = [f"{_flag(name)}/--no-{name.replace('_', '-')}"]
        default = ... if name in _REQUIRED_ON_THE_COMMAND_LINE else info.default
        option = typer.Option(default, *decls, help=info.description)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind))
    return params


def build_job(values: dict[str, Any], typed: set[str] | None = None) -> JobInput:
    """A `JobInput` from option values; a value the schema rejects ends the command with one line
    naming the option. `typed`: the options given on the command line (a value equal to its default
    counts as given when typed: `--kind inference --method qlora` is refused, not read as no method)."""
    from pydantic import ValidationError

    # An option left at its default was not given: the schema refuses a given fine-tuning field on an
    # inference job (and the reverse), and an alert saves only what the user set.
    given = {k: v for k, v in values.items() if v != JobInput.model_fields[k].default or k in (typed or set())}
    try:
        return JobInput(**given)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = error["loc"][0] if error["loc"] else None
        option = _flag(str(where)) if where is not None else "job"
        fail(f"{option}: {error['msg'].removeprefix('Value error, ')}")


def _typed() -> set[str]:
    """The job options the user gave on the command line (or through the environment) in this command."""
    try:  # Typer 0.2x vendors its own click (as tracker.cli.root reads its errors)
        from typer._click.core import ParameterSource
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover - depends on the installed Typer
        from click.core import ParameterSource  # type: ignore[assignment]
        from click.globals import get_current_context  # type: ignore[no-redef]

    ctx = get_current_context(silent=True)
    if ctx is None:
        return set()
    return {
        n
        for n in JOB_OPTION_NAMES
        if ctx.get_parameter_source(n) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    }


def with_job(command: F) -> F:
    """Give `command` the job options; it receives the validated job as its `job` argument."""
    signature = inspect.signature(command)
    own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in signature.parameters.values() if p.name != "job"]
    hints = typing.get_type_hints(command)
    context = [p for p in own if hints.get(p.name) is typer.Context]
    rest = [p for p in own if hints.get(p.name) is not typer.Context]
    parameters = context + _parameters() + rest

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        job = build_job({name: kwargs.pop(name) for name in JOB_OPTION_NAMES}, _typed())
        return command(job=job, **kwargs)

    # Typer reads the command's parameters from its signature and type hints: give it the generated ones.
    wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: hints.get(p.name, p.annotation) for p in own} | {
        p.name: p.annotation for p in parameters if p.name in JOB_OPTION_NAMES
    }
    del wrapper.__wrapped__  # typing.get_type_hints must read the wrapper's annotations, not the command's
    return typing.cast(F, wrapper)
