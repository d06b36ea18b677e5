"""The estimate package imports at module level only: no function-local import dodges a circle.

import-linter's acyclic_siblings contract (pyproject.toml) keeps the siblings of every package free of
cycles; this keeps them honest about it. An import inside a function is where a circle used to hide (the
fit imported the model that imported the fit), so none is allowed under tracker/estimate. A lazily
imported heavy optional library would be the one acceptable kind: name it in LAZY with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tracker.estimate

PACKAGE = Path(tracker.estimate.__file__).parent
LAZY: dict[str, str] = {}  # top-level module name -> why it is imported where it is used


def _function_local_imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    found += [(node.lineno, alias.name) for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    found.append((node.lineno, "." * node.level + (node.module or "")))
    return found


def test_no_function_local_imports_in_the_estimate_package() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 20
    offending = [
        f"{path.relative_to(PACKAGE)}:{line} imports {name}"
        for path in files
        for line, name in _function_local_imports(path)
        if name.split(".")[0] not in LAZY
    ]
    assert offending == []


def test_the_walk_finds_a_function_local_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os\n\ndef f():\n    from tracker.estimate import step\n    return step\n")
    assert _function_local_imports(sample) == [(4, "tracker.estimate")]
