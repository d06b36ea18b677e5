"""Bearer-token guard for mutating endpoints (everything but GET and the read-only POST queries)."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

_bearer = HTTPBearer(auto_error=False, description="TRACKER_API_TOKEN")


def require_token(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    expected = request.app.state.settings.api_token
    if expected is None:
        # Refuse rather than run open: an operator must choose a token to enable writes.
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, "no API token is configured: set TRACKER_API_TOKEN to enable this endpoint"
        )
    given = credentials.credentials if credentials else ""
    if not hmac.compare_digest(given.encode(), expected.get_secret_value().encode()):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing or invalid bearer token",
            headers={"WWW-Authenticate": "Bearer"},
        )
