"""Discovers provider adapters: every module in `providers/` that defines a concrete `Provider`.

Discovery (rather than a hand-kept list) means adding a provider is adding one module.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import lru_cache

import providers
from providers.base import Provider, ProviderKind

_INFRASTRUCTURE = {"base", "cassette", "http", "registry", "sheet"}


class UnknownProvider(KeyError):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(name)
        self.name, self.known = name, known

    def __str__(self) -> str:
        return f"unknown provider {self.name!r}; known: {', '.join(self.known)}"


@lru_cache(maxsize=1)
def all_providers() -> dict[str, type[Provider]]:
    found: dict[str, type[Provider]] = {}
    for module_info in pkgutil.iter_modules(providers.__path__):
        if module_info.name in _INFRASTRUCTURE or module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"providers.{module_info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(obj, Provider)
                and not inspect.isabstract(obj)
                and obj.__module__ == module.__name__
            ):
                if obj.name in found:
                    raise RuntimeError(f"two providers named {obj.name!r}")
                found[obj.name] = obj
    return dict(sorted(found.items()))


def get_provider(name: str) -> type[Provider]:
    known = all_providers()
    if name not in known:
        raise UnknownProvider(name, list(known))
    return known[name]


def reference_providers() -> set[str]:
    """Providers whose prices are static published sheets (reference data, not a live market)."""
    return {name for name, p in all_providers().items() if p.kind == ProviderKind.static_sheet}
