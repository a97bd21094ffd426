"""Workers run workflow code outside the SDK's sandbox (worker.workflow_runner), so a workflow
module is imported once per process, not once per run: any state it held at module level would
be shared by every run and could differ between a run and its replay elsewhere. Its module-level
names must therefore hold values that cannot change."""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path

import pytest

WORKFLOWS = Path(__file__).resolve().parents[2] / "workflows"
MODULES = sorted(p.stem for p in WORKFLOWS.glob("*.py") if p.stem != "__init__")
IMMUTABLE = (str, bytes, int, float, bool, type(None), tuple, frozenset)


def _assigned(path: Path) -> list[str]:
    """The names a module assigns at its top level (imports, functions and classes aside)."""
    names: list[str] = []
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def _frozen(value: object) -> bool:
    if isinstance(value, tuple | frozenset):
        return all(_frozen(v) for v in value)
    if isinstance(value, IMMUTABLE):
        return True
    params = getattr(type(value), "__dataclass_params__", None)
    return dataclasses.is_dataclass(value) and params is not None and params.frozen


@pytest.mark.parametrize("name", MODULES)
def test_a_workflow_module_holds_no_mutable_state(name: str) -> None:
    module = importlib.import_module(f"workflows.{name}")
    mutable = {
        n: type(getattr(module, n)).__name__
        for n in _assigned(WORKFLOWS / f"{name}.py")
        if not _frozen(getattr(module, n))
    }
    assert mutable == {}
