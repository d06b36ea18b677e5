"""Errors become JSON with the right status; never a stack trace."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from api.limits import bounded_errors
from api.methods import STANDARD_METHODS
from api.validation import FieldError, validation_body
from tracker.catalog.gpus import AmbiguousGpuName, UnknownGpuName
from tracker.estimate import EstimateError, UnknownAssumptions, UnknownModel

log = logging.getLogger(__name__)


def _allowed_methods(app: FastAPI, request: Request) -> list[str]:
    """Every method some route serves at this path (Starlette only reports the first partial match).

    Each method is tried through the routes' own matching: included routers are branches of the app's
    routes, not entries in it, so listing the methods of `app.router.routes` found none (`Allow: `)."""
    methods = {
        method
        for method in STANDARD_METHODS
        if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in app.router.routes)
    }
    if "GET" in methods:  # served by api.methods.HeadAsGet
        methods.add("HEAD")
    return sorted(methods)


def install(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(_allowed_methods(app, request))
        return JSONResponse(status_code=exc.status_code, content={"detail": exc.detail}, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own handler echoes the rejected values as they came (NaN, 900-deep, 100k digits): a 500.
        # Bounded too: a body of thousands of unknown keys gets the first few errors and a count.
        return JSONResponse(status_code=422, content=bounded_errors(validation_body, exc.errors()))

    @app.exception_handler(FieldError)
    async def _bad_field(_: Request, exc: FieldError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": exc.message, "field": exc.field})

    @app.exception_handler(UnknownGpuName)
    async def _unknown_gpu(_: Request, exc: UnknownGpuName) -> JSONResponse:
        return JSONResponse(
            status_code=404,
            content={
                "detail": str(exc),
                "field": "gpu",
                "suggestions": list(getattr(exc, "suggestions", [])),
            },
        )

    @app.exception_handler(AmbiguousGpuName)
    async def _ambiguous_gpu(_: Request, exc: AmbiguousGpuName) -> JSONResponse:
        return JSONResponse(
            status_code=422,
            content={"detail": str(exc), "field": "gpu", "candidates": list(getattr(exc, "candidates", []))},
        )

    @app.exception_handler(EstimateError)
    async def _bad_job(_: Request, exc: EstimateError) -> JSONResponse:
        # Unknown names are "not found" with suggestions; anything else is a bad value in a named field.
        status = 404 if isinstance(exc, UnknownModel | UnknownAssumptions) else 422
        body: dict[str, object] = {"detail": exc.message, "field": exc.field}
        if suggestions := getattr(exc, "suggestions", None):
            body["suggestions"] = list(suggestions)
        return JSONResponse(status_code=status, content=body)

    @app.exception_handler(OperationalError)
    async def _db_down(_: Request, exc: OperationalError) -> JSONResponse:
        log.error("database unreachable: %s", exc.orig)
        return JSONResponse(status_code=503, content={"detail": "database unavailable"})

    @app.exception_handler(SQLAlchemyError)
    async def _db_error(_: Request, exc: SQLAlchemyError) -> JSONResponse:
        log.exception("database error")
        return JSONResponse(status_code=503, content={"detail": "database error"})

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return JSONResponse(status_code=500, content={"detail": "internal error"})
