"""bench/local_model.py serve: the exports it prints are valid shell and valid settings, and carry
what a CPU needs (docs/local_models.md): the context the server was given, longer timeouts and one
LLM step at a time."""

from __future__ import annotations

import subprocess

import pytest

from bench import local_model
from memory.settings import Settings


def _exported(lines: list[str]) -> dict[str, str]:
    """The MNEMOS_* variables a shell has after running the lines."""
    script = "\n".join([*lines, "env -0"])
    out = subprocess.run(
        ["bash", "-euc", script], capture_output=True, text=True, check=True, env={}
    ).stdout
    pairs = (item.partition("=") for item in out.split("\0") if item)
    return {name: value for name, _, value in pairs if name.startswith("MNEMOS_")}


def test_the_printed_exports_point_mnemos_at_the_server_with_a_cpus_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = _exported(local_model.exports("http://127.0.0.1:4321/v1", 8192))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.models.provider == "openai_compatible"
    assert settings.models.base_url == "http://127.0.0.1:4321/v1"
    assert settings.models.openai_fast == local_model.MODEL_ALIAS
    assert settings.models.openai_standard == local_model.MODEL_ALIAS
    assert settings.models.openai_premium == local_model.MODEL_ALIAS
    assert settings.models.context_tokens == 8192
    assert settings.models.request_timeout_seconds == 300
    assert settings.retries.llm_timeout_seconds == 600
    assert settings.temporal.llm_task_queue == "mnemos-llm"
    assert settings.temporal.llm_concurrency == 1


def test_the_context_export_follows_ctx() -> None:
    env = _exported(local_model.exports("http://127.0.0.1:1/v1", 4096))
    assert env["MNEMOS_MODELS__CONTEXT_TOKENS"] == "4096"
