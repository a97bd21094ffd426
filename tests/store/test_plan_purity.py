"""The planners are pure: nothing under memory/store/rules imports a database, async or I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import memory.store.rules

FORBIDDEN = ("sqlite3", "pymongo", "bson", "asyncio", "memory.store.sqlite", "memory.store.mongo")


def test_rules_import_no_backend_and_no_io() -> None:
    folder = Path(memory.store.rules.__file__).parent
    imported: dict[str, set[str]] = {}
    for path in sorted(folder.glob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            assert not isinstance(node, ast.AsyncFunctionDef | ast.Await), f"async in {path.name}"
        imported[path.name] = names
    assert len(imported) >= 8
    offending = {
        name: sorted(n for n in names if n.startswith(FORBIDDEN))
        for name, names in imported.items()
        if any(n.startswith(FORBIDDEN) for n in names)
    }
    assert offending == {}
