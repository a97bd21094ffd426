"""The LLM SDKs are loaded by the provider that uses them, not by every process: the worker and
the command line import the error classification (activities/errors.py), and importing the
OpenAI and Gemini SDKs there cost each of them about a second of start-up, the heuristic
provider's and `mnemos replay`'s children included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SDKS = ("openai", "google.genai", "httpx2")


def _loaded_after(statement: str) -> list[str]:
    probe = f"import sys\n{statement}\nprint(*[m for m in {SDKS!r} if m in sys.modules])"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_the_worker_and_the_command_line_load_no_llm_sdk() -> None:
    assert _loaded_after("import worker, cli.app, cli.replay_child, activities.errors") == []


def test_the_chosen_provider_loads_its_sdk() -> None:
    loaded = _loaded_after(
        "from memory.llm.openai_provider import OpenAIProvider\n"
        "OpenAIProvider(api_key='k', base_url='http://127.0.0.1:1/v1')"
    )
    assert "openai" in loaded and "google.genai" not in loaded
