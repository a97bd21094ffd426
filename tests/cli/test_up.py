"""`mnemos up --exit` (what `make run` runs) as a subprocess with its own dev server: the demo forms
memories, announces the HTTP API with a development key, stops cleanly, and keeps the key for the
next run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import free_port
from tests.cli.test_cli import ROOT


def test_up_runs_the_demo_stack_and_exits(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "data" / "mnemos.db"),
        "MNEMOS_TEMPORAL__ADDRESS": f"127.0.0.1:{free_port()}",
        "MNEMOS_TEMPORAL__UI_URL": f"http://127.0.0.1:{free_port()}",
        "MNEMOS_TEMPORAL__METRICS_BIND": "",
        "MNEMOS_MODELS__PROVIDER": "heuristic",
    }
    api_port = free_port()
    env["MNEMOS_API_PORT"] = str(api_port)
    done = subprocess.run(
        [sys.executable, "-m", "cli", "up", "--exit"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "=== Facts formed ===" in done.stdout and "Stopped." in done.stdout
    # The API and page are announced with a development key, kept for the next run.
    assert "=== HTTP API and memory page ===" in done.stdout
    assert f"http://127.0.0.1:{api_port}  (memory page: " in done.stdout
    keys = re.findall(r"^(mk_\S+)$", done.stdout, re.MULTILINE)
    assert len(keys) == 1
    again = subprocess.run(
        [sys.executable, "-m", "cli", "up", "--exit"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert re.findall(r"^(mk_\S+)$", again.stdout, re.MULTILINE) == keys
