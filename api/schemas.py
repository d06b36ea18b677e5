"""Shapes shared by several routes. A job's request body is the job schema itself (tracker.estimate.JobInput)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ErrorBody(BaseModel):
    """Every error: what went wrong, which input field (if one), and what to try instead."""

    detail: Any
    field: str | None = None
    suggestions: list[str] | None = None
    candidates: list[str] | None = None


# Documented on every operation, so clients (and schemathesis) know the error shapes.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Malformed request body (not JSON)"},
    401: {"model": ErrorBody, "description": "Missing or invalid bearer token (mutating endpoints)"},
    403: {"model": ErrorBody, "description": "Mutating endpoints disabled: no TRACKER_API_TOKEN configured"},
    404: {"model": ErrorBody, "description": "Unknown GPU, model or resource; suggestions included"},
    422: {"description": "Invalid input; the field is named"},
    503: {"model": ErrorBody, "description": "Database unavailable"},
}
