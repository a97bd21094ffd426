"""The ``retries`` group of the settings (``MNEMOS_RETRIES__*``): the activities' timeouts and
retry policies, in its own module to keep settings.py readable."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from memory.settings_group import SettingsGroup


class RetrySettings(SettingsGroup):
    """Activity timeouts and retries. Carried in each workflow's input, so a run keeps the policy it
    started with (replay-safe) and operators tune it without a deploy."""

    llm_timeout_seconds: float = Field(
        180, gt=0, description="Start-to-close timeout of an LLM step"
    )
    llm_heartbeat_seconds: float = Field(
        20, gt=0, description="A worker silent this long is presumed dead"
    )
    llm_max_attempts: int = Field(
        5, ge=1, description="Attempts of an LLM step before the run fails"
    )
    llm_initial_interval_seconds: float = Field(
        2, gt=0, description="First retry delay of an LLM step"
    )
    llm_max_interval_seconds: float = Field(
        60, gt=0, description="Largest retry delay of an LLM step"
    )
    store_timeout_seconds: float = Field(
        60, gt=0, description="Start-to-close timeout of a store step"
    )
    store_max_attempts: int = Field(20, ge=1, description="Attempts of a store step")
    store_heartbeat_seconds: float = Field(
        5, gt=0, description="A worker silent this long in a store step is presumed dead"
    )
    stale_decision_seconds: float = Field(
        600, gt=0, description="How long a formation re-decides stale decisions (backoff, jitter)"
    )
    store_initial_interval_seconds: float = Field(
        1, gt=0, description="First retry delay of a store step"
    )
    store_max_interval_seconds: float = Field(
        5, gt=0, description="Largest retry delay of a store step (a dead worker costs this too)"
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        # Temporal refuses such a retry policy only when a workflow schedules the step: each
        # workflow task would fail, and be retried, forever. Refuse it at start instead.
        for step, initial, maximum in (
            ("llm", self.llm_initial_interval_seconds, self.llm_max_interval_seconds),
            ("store", self.store_initial_interval_seconds, self.store_max_interval_seconds),
        ):
            if initial > maximum:
                raise ValueError(
                    f"{step}_initial_interval_seconds ({initial:g}) must not exceed "
                    f"{step}_max_interval_seconds ({maximum:g})"
                )
        if self.llm_heartbeat_seconds >= self.llm_timeout_seconds:
            raise ValueError(
                f"llm_heartbeat_seconds ({self.llm_heartbeat_seconds:g}) must be less than "
                f"llm_timeout_seconds ({self.llm_timeout_seconds:g})"
            )
        return self
