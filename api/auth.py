"""Bearer-token guard for mutating endpoints (everything but GET and the read-only POST queries)."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from tracker.config import Settings

_bearer = HTTPBearer(auto_error=False, description="TRACKER_API_TOKEN")


def token_problem(settings: Settings, given: str) -> tuple[int, str] | None:
    """None if `given` is the configured token; else the status and message to refuse with (the one rule
    for the API's writes and the MCP endpoint, api.mcp.http)."""
    expected = settings.api_token
    if expected is None:
        # Refuse rather than run open: an operator must choose a token to enable this endpoint.
        return status.HTTP_403_FORBIDDEN, "no API token is configured: set TRACKER_API_TOKEN to enable this endpoint"
    if not hmac.compare_digest(given.encode(), expected.get_secret_value().encode()):
        return status.HTTP_401_UNAUTHORIZED, "missing or invalid bearer token"
    return None


def require_token(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    problem = token_problem(request.app.state.settings, credentials.credentials if credentials else "")
    if problem is None:
        return
    code, message = problem
    headers = {"WWW-Authenticate": "Bearer"} if code == status.HTTP_401_UNAUTHORIZED else None
    raise HTTPException(code, message, headers=headers)
