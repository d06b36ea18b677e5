"""Route modules, listed: each defines `router`, and the app includes exactly these, in this order."""

from __future__ import annotations

import importlib

from fastapi import APIRouter

# The API's whole surface in one list; a module is imported when the app is built, never at import time.
ROUTE_MODULES = (
    "alerts",
    "availability",
    "dashboard",
    "docs",
    "estimate",
    "export",
    "index",
    "market",
    "metrics",
    "offers",
    "overview",
    "plan",
    "providers",
    "rank",
    "reference",
)


def all_routers() -> list[APIRouter]:
    routers: list[APIRouter] = [importlib.import_module(f"api.routes.{name}").router for name in ROUTE_MODULES]
    return routers
