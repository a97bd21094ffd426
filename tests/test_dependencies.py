"""Every third-party module the code imports comes from a distribution pyproject.toml declares: the
shipped packages from [project.dependencies], tests and benches from those or the dev extra. A
module that arrives only as another package's dependency breaks when that package drops it."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("memory", "workflows", "activities", "runtime", "client", "serve", "cli", "worker.py")
DEVELOPMENT = ("tests", "bench")
OURS = {
    "memory",
    "workflows",
    "activities",
    "runtime",
    "client",
    "serve",
    "cli",
    "worker",
    "tests",
    "bench",
}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> tuple[set[str], set[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(requirements: list[str]) -> set[str]:
        return {_normal(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) for r in requirements}

    return names(project["dependencies"]), names(project["optional-dependencies"]["dev"])


def _top_level_imports(paths: tuple[str, ...]) -> dict[str, str]:
    """Third-party top-level module -> one file importing it."""
    files = [p for entry in paths for p in (ROOT / entry).rglob("*.py")]
    found: dict[str, str] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in OURS and top != "__future__":
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def _undeclared(imports: dict[str, str], declared: set[str]) -> list[str]:
    providers = packages_distributions()
    return sorted(
        f"{module} (in {where}; from {providers.get(module, ['nothing installed'])})"
        for module, where in imports.items()
        if not {_normal(d) for d in providers.get(module, [])} & declared
    )


def test_shipped_code_imports_only_declared_dependencies() -> None:
    runtime, _ = _declared()
    imports = _top_level_imports(SHIPPED)
    assert {"temporalio", "pydantic", "httpx2", "rich"} <= set(imports)  # the scan sees them
    assert _undeclared(imports, runtime) == []


def test_tests_and_benches_import_only_declared_dependencies() -> None:
    runtime, dev = _declared()
    imports = _top_level_imports(DEVELOPMENT)
    assert {"pytest", "yaml", "hypothesis"} <= set(imports)
    assert _undeclared(imports, runtime | dev) == []


def test_an_undeclared_import_is_reported() -> None:
    assert _undeclared({"numpy": "x.py"}, {"numpy"}) == []
    assert _undeclared({"numpy": "x.py"}, {"pydantic"}) == ["numpy (in x.py; from ['numpy'])"]
