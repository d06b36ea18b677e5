"""The offer filters as query parameters, generated from the one schema (tracker.market.filters.OfferFilters).

`offer_filters(...)` builds a dependency whose parameters are the schema's fields, spelled as the schema
says a query string spells them (`provider`, repeatable, for `providers`), each with its constraints and
description. A route declares `filters: Annotated[OfferFilters, Depends(offer_filters())]` and gets the
validated filters; a field added to the schema is a parameter of every such route, documented in /docs.
A cross-field error (min_gpus above max_gpus) is a 422 naming the parameter, like any other.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from fastapi import Query
from pydantic import ValidationError

from api.validation import FieldError
from tracker.market.filters import FLAGS, OfferFilters

__all__ = ["offer_filters", "query_name"]


def query_name(field: str) -> str:
    return FLAGS.get(field, field)


def offer_filters(exclude: Iterable[str] = (), defaults: dict[str, Any] | None = None) -> Callable[..., OfferFilters]:
    """A dependency giving the route the filters (all but `exclude`), read from the query string."""
    skip, defaults = frozenset(exclude), defaults or {}
    fields = {n: f for n, f in OfferFilters.model_fields.items() if n not in skip}
    params = [
        inspect.Parameter(
            query_name(name),
            inspect.Parameter.KEYWORD_ONLY,
            default=defaults.get(name, info.default),
            annotation=Annotated[info.annotation, *info.metadata, Query(description=info.description)],
        )
        for name, info in fields.items()
    ]

    def dependency(**values: Any) -> OfferFilters:
        given = {name: values[query_name(name)] for name in fields}
        try:
            return OfferFilters(**given)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            field = str(error["loc"][0]) if error["loc"] else "min_gpus"  # the one cross-field rule
            raise FieldError(error["msg"].removeprefix("Value error, "), query_name(field)) from None

    dependency.__signature__ = inspect.Signature(params, return_annotation=OfferFilters)  # type: ignore[attr-defined]
    return dependency
