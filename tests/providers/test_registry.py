"""The registry is complete and `providers` stands alone.

`providers.registry.PROVIDERS` is a hand-kept list, so nothing but this test notices an adapter module
that was written and never registered (it would silently never be scraped). The ingest side depends on
`providers`, never the reverse, so `providers` must not import `tracker` or `api`.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections import Counter
from pathlib import Path

import pytest

import providers
import providers.adapters
from providers.contract import Provider
from providers.registry import PROVIDERS, all_providers

PACKAGE_ROOT = Path(providers.__file__).parent
FORBIDDEN = frozenset({"tracker", "api"})


def _adapter_modules() -> list[str]:
    return sorted(
        f"{providers.adapters.__name__}.{info.name}" for info in pkgutil.iter_modules(providers.adapters.__path__)
    )


def _concrete_providers(module_name: str) -> list[type[Provider]]:
    """Concrete Provider subclasses defined in the module itself (not ones it merely imports)."""
    module = importlib.import_module(module_name)
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Provider)
        and obj.__module__ == module_name
        and not inspect.isabstract(obj)
    ]


ADAPTER_MODULES = _adapter_modules()


def test_adapter_modules_are_found():
    # Guards the tests below against passing vacuously should discovery ever find nothing.
    files = sorted(p.stem for p in Path(providers.adapters.__file__).parent.glob("*.py") if p.stem != "__init__")
    assert [name.rsplit(".", 1)[1] for name in ADAPTER_MODULES] == files
    assert len(ADAPTER_MODULES) >= 16


@pytest.mark.parametrize("module_name", ADAPTER_MODULES)
def test_every_adapter_module_is_registered(module_name):
    found = _concrete_providers(module_name)
    missing = [cls.__qualname__ for cls in found if cls not in PROVIDERS]
    assert not missing, f"{module_name} defines {missing}, not listed in providers.registry.PROVIDERS"


def test_registry_lists_exactly_the_adapters():
    discovered = {cls for name in ADAPTER_MODULES for cls in _concrete_providers(name)}
    assert discovered, "no concrete Provider subclass found in providers/adapters"
    assert set(PROVIDERS) == discovered
    assert len(PROVIDERS) == len(set(PROVIDERS)), "a provider class is listed twice"


def test_provider_names_are_unique():
    counts = Counter(cls.name for cls in PROVIDERS)
    duplicates = sorted(name for name, n in counts.items() if n > 1)
    assert not duplicates, f"two or more providers named {duplicates}"
    assert all(isinstance(cls.name, str) and cls.name for cls in PROVIDERS)
    assert sorted(all_providers()) == sorted(counts)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(source: str, module_name: str, is_package: bool) -> list[str]:
    """Absolute names of every module an `import` / `from … import` in `source` names; relative imports
    are resolved against `module_name`, since `from ..x import y` could otherwise hide a way out."""
    package = module_name.split(".") if is_package else module_name.split(".")[:-1]
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                names.append(node.module or "")
                continue
            up = node.level - 1
            if up >= len(package):
                names.append("<relative import above the top-level package>")
                continue
            base = package[: len(package) - up]
            names.append(".".join([*base, node.module] if node.module else base))
    return names


def _forbidden(names: list[str]) -> list[str]:
    return [name for name in names if name.split(".", 1)[0] in FORBIDDEN or name.startswith("<")]


def test_import_check_catches_violations():
    # The check below must be able to fail: feed it the shapes of import it has to catch.
    source = "import os\nimport tracker.config\nfrom api import app\nfrom tracker.storage import x as y\n"
    assert _forbidden(_imported_modules(source, "providers.http", False)) == [
        "tracker.config",
        "api",
        "tracker.storage",
    ]
    inside = "def f():\n    if True:\n        import api.routes\n"
    assert _forbidden(_imported_modules(inside, "providers.http", False)) == ["api.routes"]
    relative = "from . import contract\nfrom .adapters import aws\nfrom .. import tracker\n"
    resolved = _imported_modules(relative, "providers.http", False)
    assert resolved[:2] == ["providers", "providers.adapters"]
    assert _forbidden(resolved) == ["<relative import above the top-level package>"]
    assert _imported_modules("from ..contract import Provider\n", "providers.adapters.aws", False) == [
        "providers.contract"
    ]


SOURCES = sorted(PACKAGE_ROOT.rglob("*.py"))


def test_sources_are_found():
    assert PACKAGE_ROOT / "contract.py" in SOURCES
    assert PACKAGE_ROOT / "adapters" / "aws.py" in SOURCES


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE_ROOT)))
def test_providers_import_nothing_from_tracker_or_api(path):
    names = _imported_modules(path.read_text(), _module_name(path), path.name == "__init__.py")
    assert not _forbidden(names), f"{path.relative_to(PACKAGE_ROOT.parent)} imports {_forbidden(names)}"
