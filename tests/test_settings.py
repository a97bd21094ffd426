from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from memory.settings import Settings, read_settings
from memory.settings_doc import settings_table
from memory.settings_errors import InvalidSettingsError


def test_defaults_are_the_design_numbers() -> None:
    s = Settings()
    assert (s.formation.message_interval, s.formation.token_interval, s.formation.min_messages) == (
        45,
        1500,
        4,
    )
    assert (s.formation.weight_user, s.formation.weight_tool, s.formation.weight_agent) == (
        1.0,
        0.5,
        0.2,
    )
    assert [s.reflections.threshold(x) for x in ("agent", "user", "session")] == [10, 4, 4]
    assert [s.reflections.word_limit(x) for x in ("agent", "user", "session")] == [1200, 300, 200]
    assert (s.facts.fifo_limit, s.facts.fifo_max_age_hours, s.facts.dedup_similarity_threshold) == (
        40,
        168,
        0.7,
    )
    assert (
        s.rag.semantic_score_threshold,
        s.rag.text_score_threshold,
        s.rag.rrf_score_threshold,
    ) == (0.65, 1.5, 0.015)
    assert (s.context.cache_ttl_seconds, s.sessions.cold_after_minutes) == (300, 10)


def test_environment_overrides_a_nested_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOS_FORMATION__MESSAGE_INTERVAL", "30")
    monkeypatch.setenv("MNEMOS_STORE__BACKEND", "sqlite")
    assert Settings().formation.message_interval == 30


def test_an_invalid_value_names_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOS_REFLECTIONS__THRESHOLD_USER", "zero")
    with pytest.raises(ValidationError, match="threshold_user"):
        Settings()


@pytest.mark.parametrize(
    ("variable", "value", "fields"),
    [
        (
            "STORE_INITIAL_INTERVAL_SECONDS",
            "10",
            "store_initial_interval_seconds.*store_max_interval_seconds",
        ),
        (
            "LLM_INITIAL_INTERVAL_SECONDS",
            "120",
            "llm_initial_interval_seconds.*llm_max_interval_seconds",
        ),
        ("LLM_HEARTBEAT_SECONDS", "180", "llm_heartbeat_seconds.*llm_timeout_seconds"),
    ],
)
def test_inconsistent_retry_timings_are_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, fields: str
) -> None:
    """Temporal refuses an initial retry interval above the maximum only when a workflow schedules
    the step, failing its workflow task forever: refuse it when the settings load."""
    monkeypatch.setenv(f"MNEMOS_RETRIES__{variable}", value)
    with pytest.raises(ValidationError, match=fields):
        Settings()


def test_an_initial_retry_interval_equal_to_the_maximum_is_accepted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MNEMOS_RETRIES__STORE_INITIAL_INTERVAL_SECONDS", "5")
    assert Settings().retries.store_initial_interval_seconds == 5


@pytest.mark.parametrize(
    ("variable", "value"),
    [("WORD_LIMIT_AGENT", "2400"), ("RECENT_IN_CONTEXT", "40"), ("MAX_WORDS", "120")],
)
def test_reflection_memory_too_big_for_a_small_models_context_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    """On the documented local model (8,192 tokens), memory these limits admit would fill every
    window's reflection prompt: reflections would stop forming for every session. Refused when
    the settings load, naming the settings."""
    monkeypatch.setenv("MNEMOS_MODELS__CONTEXT_TOKENS", "8192")
    monkeypatch.setenv(f"MNEMOS_REFLECTIONS__{variable}", value)
    with pytest.raises(InvalidSettingsError) as refused:
        read_settings()
    assert variable in str(refused.value)
    assert "MNEMOS_MODELS__CONTEXT_TOKENS" in str(refused.value)


def test_the_documented_local_model_setup_and_hosted_models_keep_their_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MNEMOS_MODELS__CONTEXT_TOKENS", "8192")
    assert read_settings().reflections.word_limit_agent == 1200
    # Without a context size (a hosted model's is far larger) any limit is the operator's.
    monkeypatch.delenv("MNEMOS_MODELS__CONTEXT_TOKENS")
    monkeypatch.setenv("MNEMOS_REFLECTIONS__WORD_LIMIT_AGENT", "2400")
    assert read_settings().reflections.word_limit_agent == 2400


def test_mongo_backend_needs_a_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOS_STORE__BACKEND", "mongo")
    with pytest.raises(ValidationError, match="mongodb_uri"):
        Settings()


def test_postgres_backend_needs_a_dsn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOS_STORE__BACKEND", "postgres")
    with pytest.raises(ValidationError, match="postgres_dsn"):
        Settings()
    monkeypatch.setenv("MNEMOS_STORE__POSTGRES_DSN", "postgresql://mnemos@db/mnemos")
    assert Settings().store.backend == "postgres"


def test_readme_lists_every_setting() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert settings_table() in readme, (
        "README settings table is stale: run `python -m memory.settings_doc README.md`"
    )


@pytest.mark.parametrize(
    ("variable", "meant"),
    [
        ("MNEMOS_STORE_BACKEND", "MNEMOS_STORE__BACKEND"),
        ("MNEMOS_TEMPORAL_ADDRESS", "MNEMOS_TEMPORAL__ADDRESS"),
        ("MNEMOS_STORE_SQLITE_PATH", "MNEMOS_STORE__SQLITE_PATH"),
        ("MNEMOS_LOGLEVEL", "MNEMOS_LOG_LEVEL"),
    ],
)
def test_a_setting_spelt_with_one_underscore_is_refused_naming_the_one_meant(
    monkeypatch: pytest.MonkeyPatch, variable: str, meant: str
) -> None:
    """pydantic-settings ignores an unknown top-level name: the process would run on the
    defaults, SQLite in the pod (found by H130)."""
    monkeypatch.setenv(variable, "postgres")
    with pytest.raises(InvalidSettingsError) as refused:
        read_settings()
    assert str(refused.value) == f"invalid settings: {variable} is not read: did you mean {meant}?"


def test_a_backends_own_mnemos_variables_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MNEMOS_URL", "MNEMOS_API_KEY", "MNEMOS_AGENT", "MNEMOS_API_KEYS_FILE"):
        monkeypatch.setenv(name, "x")
    assert read_settings().store.backend == "sqlite"
