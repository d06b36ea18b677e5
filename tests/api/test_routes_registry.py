"""The route list is the API's whole surface: every route module is listed, and each listed one has a router."""

from __future__ import annotations

import pkgutil

import api.routes
from api.routes import ROUTE_MODULES, all_routers


def test_every_route_module_is_listed_once() -> None:
    found = {m.name for m in pkgutil.iter_modules(api.routes.__path__)}
    assert sorted(ROUTE_MODULES) == sorted(found)
    assert len(set(ROUTE_MODULES)) == len(ROUTE_MODULES)


def test_each_listed_module_gives_its_router() -> None:
    assert len(all_routers()) == len(ROUTE_MODULES)
