"""The layers of the code base, read from its import statements (every one: at module level, inside
functions, under TYPE_CHECKING): imports point down, never back up, and no module imports one that
imports it back, however long the loop.

    memory       the domain core: no Temporal plumbing, no orchestration, no client
    workflows    orchestration of the activities
    activities   thin wrappers over the core; start workflows through runtime
    runtime      Temporal plumbing the worker, activities and client share
    worker       the worker's building blocks
    client       what an agent backend imports
    serve        the HTTP API, memory page and MCP tools over the client (for non-Python backends)
    cli          the operator's command line and local stack (may import anything)
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("memory", "workflows", "activities", "runtime", "client", "serve", "cli")
TOP_MODULES = ("worker",)
LAYERS = (*PACKAGES, *TOP_MODULES)

# What each layer must not import (directly; the cycle check covers the indirect loops).
FORBIDDEN: dict[str, set[str]] = {
    "memory": {"activities", "workflows", "runtime", "worker", "client", "serve", "cli"},
    "workflows": {"runtime", "worker", "client", "serve", "cli"},
    "activities": {"worker", "client", "serve", "cli"},
    "runtime": {"activities", "worker", "client", "serve", "cli"},
    "worker": {"client", "serve", "cli"},
    "client": {"activities", "worker", "serve", "cli"},
    "serve": {"activities", "worker", "cli"},
    "cli": set(),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    found.update({name: ROOT / f"{name}.py" for name in TOP_MODULES})
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


@cache
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_every_module_and_its_imports() -> None:
    graph = _graph()
    assert {"worker", "client.memory_client", "cli.app", "runtime.starts"} <= set(graph)
    assert "runtime.starts" in graph["activities.sessions"]  # a plain `from x import y`
    assert "cli.manage" in graph["cli.app"]  # `from cli import manage`: the module, not the package
    assert "worker" in graph["cli.demo"]


def test_the_cycle_check_finds_a_loop() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert _cycles(_graph()) == []


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_point_down(layer: str) -> None:
    graph = _graph()
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if name.split(".")[0] == layer
        for target in targets
        if target.split(".")[0] in FORBIDDEN[layer]
    )
    assert upward == []


def test_the_layer_check_flags_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "memory" / "x.py"
    module.parent.mkdir()
    module.write_text("from client import tools\nimport runtime.starts as s\n")
    imports = _imports("memory.x", module, {"memory.x", "client.tools", "runtime.starts"})
    assert imports == {"client.tools", "runtime.starts"}
    assert {i.split(".")[0] for i in imports} <= FORBIDDEN["memory"]
