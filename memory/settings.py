"""Every number of the design in one typed object.

Defaults come from the current design (seed 002), which wins where the older documents disagree.
Each field can be set from the environment with the prefix ``MNEMOS_`` and ``__`` between a group and
its field, e.g. ``MNEMOS_FORMATION__MESSAGE_INTERVAL=30`` or ``MNEMOS_STORE__BACKEND=mongo``.
An invalid value fails at start-up with a pydantic error naming the field.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from memory.settings_codec import CodecSettings as CodecSettings
from memory.settings_errors import InvalidSettingsError, invalid_settings, misspelt_variable
from memory.settings_group import SettingsGroup
from memory.settings_models import ModelSettings as ModelSettings
from memory.settings_rate_limit import RateLimitSettings as RateLimitSettings
from memory.settings_retries import RetrySettings as RetrySettings
from memory.settings_scope import Scope as Scope
from memory.settings_temporal import TemporalSettings as TemporalSettings


class FormationSettings(SettingsGroup):
    """When the hot path starts a formation (seed 002 "Formation Triggers", 004 "Message Weighting")."""

    message_interval: int = Field(
        45, ge=1, description="Messages since the last formation that trigger one"
    )
    token_interval: int = Field(
        1500, ge=1, description="Weighted tokens since the last formation that trigger one"
    )
    min_messages: int = Field(
        4, ge=1, description="Never form memories from fewer messages than this"
    )
    trigger_hold_seconds: float = Field(
        30.0,
        ge=0,
        description="A due session's formation is requested once per server process until it "
        "commits (it then forms what arrived meanwhile itself), at most this long; 0: every due "
        "turn requests it",
    )
    weight_user: float = Field(1.0, ge=0, description="Token weight of user messages")
    weight_tool: float = Field(0.5, ge=0, description="Token weight of tool results")
    weight_agent: float = Field(0.2, ge=0, description="Token weight of agent messages")
    weight_other: float = Field(0.5, ge=0, description="Token weight of any other role")
    chars_per_token: float = Field(
        4.0, gt=0, description="Characters per token for the token estimate"
    )
    max_messages_per_run: int | None = Field(
        None,
        ge=1,
        description="Most messages one formation reads (the rest: the next window of the drain); "
        "unset: twice the facts one extraction answer carries (2 × min(40, "
        "facts.max_per_formation) = 80), so a window seldom needs a split",
    )
    max_tokens_per_run: int = Field(
        8000,
        ge=100,
        description="Most estimated tokens (characters / chars_per_token) one formation reads, "
        "about 200 per fact one answer carries and far below every supported model's context; "
        "a longer message is read alone, in slices of this size, stored whole",
    )

    @property
    def max_chars_per_run(self) -> int:
        return int(self.max_tokens_per_run * self.chars_per_token)

    def weight(self, role: str) -> float:
        return {
            "user": self.weight_user,
            "tool": self.weight_tool,
            "agent": self.weight_agent,
        }.get(role, self.weight_other)


class FactSettings(SettingsGroup):
    """Fact extraction, deduplication and the always-in-context FIFO (002 "Facts System")."""

    max_words: int = Field(30, ge=5, description="Most words in one fact")
    max_per_formation: int = Field(40, ge=1, description="Most facts kept from one extraction")
    reread_messages: int = Field(
        3, ge=0, description="Most messages of a window read again alone when its answer passed "
        "them over (a number or name no fact writes; memory/pipeline/rereads.py). 0: never",
    )  # fmt: skip
    dedup_enabled: bool = Field(True, description="Run the ADD/UPDATE/DELETE/NONE decision")
    dedup_similarity_threshold: float = Field(
        0.7,
        ge=0,
        le=1,
        description="Min cosine of a dedup candidate when set; unset, the embedder's calibrated gate"
        " applies (MiniLM 0.45, OpenAI 0.7; this default for an uncalibrated one)",
    )
    dedup_candidates: int = Field(
        5, ge=1, le=20, description="Most similar existing facts per new fact"
    )
    fifo_enabled: bool = Field(True, description="Show recent facts in the memory context")
    fifo_limit: int = Field(40, ge=0, description="Most recent facts in the memory context")
    fifo_max_age_hours: float = Field(
        24 * 7,
        gt=0,
        description="Only facts said within this age (by their messages' time; a fact with no "
        "said time: formed or updated), newest said first",
    )


class ReflectionSettings(SettingsGroup):
    """Reflection extraction and consolidation (002 "Consolidation" table)."""

    max_words: int = Field(35, ge=5, description="Most words in one reflection")
    threshold_agent: int = Field(
        10, ge=1, description="Buffered agent reflections that trigger consolidation"
    )
    threshold_user: int = Field(
        4, ge=1, description="Buffered user reflections that trigger consolidation"
    )
    threshold_session: int = Field(
        4, ge=1, description="Buffered session reflections that trigger consolidation"
    )
    word_limit_agent: int = Field(1200, ge=20, description="Word limit of the agent blob")
    word_limit_user: int = Field(300, ge=20, description="Word limit of a user blob")
    word_limit_session: int = Field(200, ge=20, description="Word limit of a session blob")
    word_limit_tolerance: float = Field(
        0.1, ge=0, le=1, description="Accepted overshoot of a word limit (0.1 = 10%)"
    )
    recent_in_context: int = Field(
        10, ge=0, description="Newest unabsorbed reflections shown per scope"
    )
    consolidation_batch: int = Field(
        50,
        ge=1,
        description="Most buffered reflections one consolidation draft merges (at least the "
        "scope's threshold); a bigger buffer is merged in turns, oldest first",
    )

    def threshold(self, scope: Scope) -> int:
        return {
            "agent": self.threshold_agent,
            "user": self.threshold_user,
            "session": self.threshold_session,
        }[scope]

    def batch(self, scope: Scope) -> int:
        """The most reflections one draft merges: a buffer grown past it (a consolidation held
        back by a long outage on a busy scope) is merged in turns, so that no draft's prompt or
        step result grows with the buffer (a step's result past 2 MB fails every attempt)."""
        return max(self.consolidation_batch, self.threshold(scope))

    def word_limit(self, scope: Scope) -> int:
        return {
            "agent": self.word_limit_agent,
            "user": self.word_limit_user,
            "session": self.word_limit_session,
        }[scope]


class RagSettings(SettingsGroup):
    """search_facts (002 "RAG Thresholds"); every score is on the store's normalised scale.

    The cosine and fused gates depend on the embedding model's scale: with ``calibrated_gates``
    (the default) an embedder that carries a measured calibration brings its own (MiniLM: cosine
    0.30, no fused gate), and 002's numbers below apply to the others (OpenAI's, which they were
    set for). Setting either number explicitly turns the calibration off, so it is never ignored.
    """

    calibrated_gates: bool = Field(
        True,
        description="Use the embedder's measured cosine and RRF gates, not the two thresholds",
    )
    semantic_score_threshold: float = Field(
        0.65, ge=0, le=1, description="Min vector similarity (cosine) when not calibrated"
    )
    text_score_threshold: float = Field(1.5, ge=0, description="Min text score (BM25-like scale)")
    rrf_score_threshold: float = Field(
        0.015, ge=0, description="Min fused RRF score when not calibrated"
    )
    rrf_k: int = Field(60, ge=1, description="RRF constant k")
    top_k_default: int = Field(10, ge=1, le=25, description="Default results per query")
    top_k_min: int = Field(1, ge=1, description="Smallest top_k a caller may ask")
    top_k_max: int = Field(25, ge=1, description="Largest top_k a caller may ask")
    max_queries: int = Field(3, ge=1, description="Most queries in one search_facts call")
    candidate_multiplier: int = Field(
        4, ge=1, description="Each search fetches top_k × this before fusion"
    )
    session_prior_weight: float = Field(
        0.3,
        ge=0,
        le=1,
        description="Share of a best hit's score that the other candidates formed in its session "
        "gain (0 turns the session prior off)",
    )
    session_prior_hits: int = Field(
        2, ge=1, le=25, description="How many of the best hits lend their session a prior"
    )

    @model_validator(mode="before")
    @classmethod
    def _explicit_gates_win(cls, data: object) -> object:
        explicit = {"semantic_score_threshold", "rrf_score_threshold"}
        if isinstance(data, dict) and "calibrated_gates" not in data and explicit & data.keys():
            return {**data, "calibrated_gates": False}
        return data


class ContextSettings(SettingsGroup):
    cache_ttl_seconds: float = Field(
        300, ge=0, description="Memory context cache TTL (002: 5 minutes)"
    )


class SessionSettings(SettingsGroup):
    """Cold sessions and retention (001 "Key Production Patterns")."""

    cold_after_minutes: float = Field(
        10, gt=0, description="Idle minutes after which a session is cold"
    )
    cold_scan_every_minutes: float = Field(
        5, gt=0, description="Interval of the cold-sessions schedule"
    )
    cold_page_size: int = Field(
        100, ge=1, description="Sessions read per page by the cold-sessions job"
    )
    cold_concurrency: int = Field(4, ge=1, description="Cold sessions formed at once")
    # Read by the job's activity from its own settings, never carried in the job's input
    # (exclude): the schedule's input stays what workers built before decode (extra="forbid").
    form_rest_after_minutes: float = Field(
        60,
        gt=0,
        exclude=True,
        description="Idle minutes after which a session's last unformed messages are formed"
        " however few: below the formation thresholds a session never ended kept them unformed",
    )
    ended_retention_days: float = Field(
        30, gt=0, description="Days session memory of ended sessions is kept"
    )


class EmbeddingSettings(SettingsGroup):
    provider: Literal["auto", "local", "openai", "gemini"] = Field(
        "local",
        description="Embedding provider; local = MiniLM int8 shipped in a PyPI wheel; auto = the"
        " LLM's vendor (openai, gemini), else local",
    )
    openai_model: str = Field("text-embedding-3-small", description="OpenAI embedding model")
    gemini_model: str = Field("gemini-embedding-001", description="Gemini embedding model")
    gemini_dimension: int = Field(768, ge=64, description="Output dimension requested from Gemini")
    # One thread: a server or worker embeds for many requests at once, so the cores are already
    # shared between them; a second intra-op thread cost 40% more CPU per query (bench/embedding.py).
    local_threads: int = Field(
        1,
        ge=1,
        description="onnxruntime intra-op threads for the local model (more: lower latency of "
        "one large batch on idle cores, more CPU per text)",
    )
    batch_size: int = Field(64, ge=1, description="Texts per model batch")
    request_timeout_seconds: float = Field(
        30, gt=0, description="HTTP timeout of one embedding call"
    )


class StoreSettings(SettingsGroup):
    backend: Literal["sqlite", "postgres", "mongo"] = Field(
        "sqlite", description="Memory store backend"
    )
    sqlite_path: Path = Field(Path(".data/mnemos.db"), description="SQLite database file")
    postgres_dsn: SecretStr | None = Field(
        None, description="PostgreSQL DSN, e.g. postgresql://user:pw@host/db (backend=postgres)"
    )
    postgres_pool_size: int = Field(10, ge=1, description="Connections per process (postgres)")
    hnsw_ef_search: int = Field(
        100, ge=1, le=1000, description="pgvector hnsw.ef_search: candidates per vector query"
    )
    mongodb_uri: SecretStr | None = Field(None, description="MongoDB URI (backend=mongo)")
    mongodb_database: str = Field("mnemos", description="MongoDB database name")
    atlas_search: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Use Atlas $vectorSearch/$search (auto: when the server has the indexes)",
    )


class Settings(BaseSettings):
    """All of mnemos' configuration. ``Settings()`` reads the environment."""

    # hide_input_in_errors: a value that fails validation may be a secret (a key, a DSN).
    model_config = SettingsConfigDict(
        env_prefix="MNEMOS_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        hide_input_in_errors=True,
    )

    formation: FormationSettings = FormationSettings()
    facts: FactSettings = FactSettings()
    reflections: ReflectionSettings = ReflectionSettings()
    rag: RagSettings = RagSettings()
    context: ContextSettings = ContextSettings()
    sessions: SessionSettings = SessionSettings()
    models: ModelSettings = ModelSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    store: StoreSettings = StoreSettings()
    temporal: TemporalSettings = TemporalSettings()
    retries: RetrySettings = RetrySettings()
    codec: CodecSettings = CodecSettings()
    rate_limit: RateLimitSettings = RateLimitSettings()
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="Log level")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        rag = self.rag
        if not rag.top_k_min <= rag.top_k_default <= rag.top_k_max:
            raise ValueError("rag: top_k_min <= top_k_default <= top_k_max must hold")
        if self.store.backend == "mongo" and self.store.mongodb_uri is None:
            raise ValueError(
                "store.mongodb_uri (MNEMOS_STORE__MONGODB_URI) is required when store.backend is mongo"
            )
        if self.store.backend == "postgres" and self.store.postgres_dsn is None:
            raise ValueError(
                "store.postgres_dsn (MNEMOS_STORE__POSTGRES_DSN) is required when store.backend "
                "is postgres"
            )
        return self._window_fits_the_model()._reflections_fit_the_model()

    def _window_fits_the_model(self) -> Self:
        """A window's transcript takes at most a third of a small model's context, the rest being
        the step's instructions and its answer (memory/llm/context_fit.py)."""
        context = self.models.context_tokens
        if context is None:
            return self
        fits = context // 3
        if "max_tokens_per_run" in self.formation.model_fields_set:
            if self.formation.max_tokens_per_run > fits:
                raise ValueError(
                    f"formation.max_tokens_per_run {self.formation.max_tokens_per_run} does not "
                    f"fit models.context_tokens {context}: at most {fits} (a third of it)"
                )
            return self
        if self.formation.max_tokens_per_run > fits:
            formation = self.formation.model_copy(update={"max_tokens_per_run": fits})
            object.__setattr__(self, "formation", formation)  # still inside validation
        return self

    def _reflections_fit_the_model(self) -> Self:
        """The part of every window's reflection prompt no split makes smaller (the memory at its
        word limits) leaves a small model's context room for a message and an answer."""
        if self.models.context_tokens is None:  # a hosted model's context is far larger
            return self
        # Imported here: loading memory.llm (its package) loads the store, which loads settings.
        from memory.prompt_budget import settings_problem

        if problem := settings_problem(self):
            raise ValueError(problem)
        return self


def read_settings() -> Settings:
    """The settings in the environment now, or InvalidSettingsError: one line naming what is
    wrong, never a value (``from None``: no traceback of pydantic's, which quotes the input)."""
    if misspelt := misspelt_variable(os.environ, Settings.model_fields):
        raise InvalidSettingsError(misspelt)
    try:
        return Settings()
    except (ValidationError, SettingsError) as e:
        raise invalid_settings(e) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment (``read_settings``)."""
    return read_settings()
