"""Route modules: each defines `router`; the app includes every one of them."""

from __future__ import annotations

import importlib
import pkgutil

from fastapi import APIRouter


def all_routers() -> list[APIRouter]:
    routers = []
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        if isinstance(router := getattr(module, "router", None), APIRouter):
            routers.append(router)
    return routers
