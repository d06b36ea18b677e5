"""Route modules, listed: each defines `router`, and the app includes exactly these, in this order."""

from __future__ import annotations

from fastapi import APIRouter


def all_routers() -> list[APIRouter]:
    from api.routes import (
        alerts,
        availability,
        dashboard,
        docs,
        estimate,
        export,
        market,
        metrics,
        offers,
        overview,
        plan,
        providers,
        rank,
        reference,
    )

    modules = (
        alerts,
        availability,
        dashboard,
        docs,
        estimate,
        export,
        market,
        metrics,
        offers,
        overview,
        plan,
        providers,
        rank,
        reference,
    )
    return [m.router for m in modules]
