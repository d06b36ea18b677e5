"""The offer-filter options of every command that filters offers, generated from the one filter schema.

`with_filters` adds one Typer option per field of `tracker.market.filters.OfferFilters` to a command,
spelled as the schema says a short form spells it (`providers` → `--provider`, repeatable;
`verified_only` → `--verified`), its description as the help, and hands the command the validated
filters as its `filters` parameter, as `tracker.cli.job_options` does for the job. A filter added to the
schema is therefore an option of `offers`, `cheapest` and `availability` without touching any of them.
Values are read as text and parsed by the schema, so a bad one gets the schema's message, naming the option.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, get_args, get_origin

import typer
from pydantic import ValidationError

from tracker.cli.output import fail
from tracker.market.filters import FLAGS, OfferFilters

__all__ = ["with_filters"]

F = TypeVar("F", bound=Callable[..., Any])

# `--no-reference` has always been how a command line leaves the reference sheets out. A yes/no/either
# filter (`live`: unset keeps every offer) is a pair of flags, neither given meaning either.
_BOOL_DECLS = {"include_reference": "--include-reference/--no-reference", "live": "--live/--stale"}


def _flag(name: str) -> str:
    return "--" + FLAGS.get(name, name).replace("_", "-")


def _is_list(annotation: Any) -> bool:
    members = get_args(annotation) if get_origin(annotation) in (typing.Union, types.UnionType) else ()
    return get_origin(annotation) is list or any(get_origin(m) is list for m in members)


def _parameter(name: str) -> inspect.Parameter:
    info = OfferFilters.model_fields[name]
    kind: Any
    if info.annotation is bool:
        kind = bool
        decls = [_BOOL_DECLS.get(name, _flag(name))]
        option = typer.Option(info.default, *decls, help=info.description)
    elif info.annotation == bool | None:
        kind = bool | None
        decl = _BOOL_DECLS.get(name, f"{_flag(name)}/--no-{_flag(name)[2:]}")
        option = typer.Option(None, decl, help=info.description)
    elif _is_list(info.annotation):
        kind = list[str]
        option = typer.Option(None, _flag(name), help=f"{info.description} (repeatable)")
    else:
        kind = str | None
        default = None if info.default is None else str(info.default)
        option = typer.Option(default, _flag(name), help=info.description)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)


def build_filters(values: dict[str, Any]) -> OfferFilters:
    """The filters from option values; a value the schema rejects ends the command with one line naming
    the option."""
    given = {k: v for k, v in values.items() if v not in (None, [])}
    try:
        return OfferFilters(**given)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = str(error["loc"][0]) if error["loc"] else "min_gpus"  # the one cross-field rule
        given_value = error.get("input")
        got = f", got {given_value!r}" if error["loc"] and isinstance(given_value, str | int | float) else ""
        fail(f"{_flag(where)}: {error['msg'].removeprefix('Value error, ')}{got}")


def with_filters(exclude: Iterable[str] = ()) -> Callable[[F], F]:
    """Give a command the filter options (all but `exclude`); it receives them as its `filters` argument."""
    names = tuple(n for n in OfferFilters.model_fields if n not in set(exclude))

    def decorate(command: F) -> F:
        signature = inspect.signature(command)
        own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in signature.parameters.values()]
        own = [p for p in own if p.name != "filters"]
        hints = typing.get_type_hints(command)
        context = [p for p in own if hints.get(p.name) is typer.Context]
        rest = [p for p in own if hints.get(p.name) is not typer.Context]
        generated = [_parameter(n) for n in names]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            filters = build_filters({name: kwargs.pop(name) for name in names})
            return command(filters=filters, **kwargs)

        # Typer reads the command's parameters from its signature and type hints: give it the generated ones.
        wrapper.__signature__ = signature.replace(parameters=[*context, *generated, *rest])  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: hints.get(p.name, p.annotation) for p in own} | {
            p.name: p.annotation for p in generated
        }
        del wrapper.__wrapped__  # typing.get_type_hints must read the wrapper's annotations, not the command's
        return typing.cast(F, wrapper)

    return decorate
