"""The ``temporal`` group of the settings (``MNEMOS_TEMPORAL__*``): where Temporal is, the task
queues, the schedule and worker versioning, in its own module to keep settings.py readable."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from memory.settings_group import SettingsGroup


class TemporalSettings(SettingsGroup):
    address: str = Field("127.0.0.1:7233", description="Temporal frontend address")
    namespace: str = Field("default", description="Temporal namespace")
    task_queue: str = Field("mnemos", description="Task queue of workflows and store activities")
    llm_task_queue: str | None = Field(
        None, description="Separate queue for LLM-bound activities (None: same queue)"
    )
    llm_activities_per_second: float | None = Field(
        None,
        gt=0,
        description="Rate limit of the LLM queue across its workers (provider quota / s)",
    )
    llm_concurrency: int | None = Field(
        None,
        ge=1,
        description="LLM steps a worker of the LLM queue runs at once (a local model server's "
        "slots); the others wait in the queue, where their timeout does not run",
    )
    ui_url: str = Field("http://127.0.0.1:8233", description="Temporal Web UI, for links")
    search_attributes: bool = Field(
        True,
        description="Tag workflows with the Mnemos* search attributes (registered by the worker)",
    )
    schedule_on_start: bool = Field(
        True,
        description="Create or update the cold-sessions schedule when a worker starts",
    )
    schedule_wait_seconds: float = Field(
        1.0,
        gt=0,
        description="Longest a hot trigger waits for Temporal before deferring the formation",
    )
    metrics_bind: str = Field(
        "127.0.0.1:9464",
        pattern=r"^(|\S+:\d{1,5})$",
        description="host:port of the worker's Prometheus /metrics endpoint ('' = none)",
    )
    health_bind: str = Field(
        "",
        pattern=r"^(|\S+:\d{1,5})$",
        description="host:port of the worker's liveness endpoint, GET /healthz, answered by its "
        "event loop once it polls ('' = none; /metrics answers even while the loop is stuck)",
    )
    workflow_sandbox: bool = Field(
        False,
        description="Run workflow code in the Temporal SDK's sandbox (per-run module isolation, "
        "checks on non-deterministic calls); replays and the workflow tests always do",
    )
    sticky_queue_seconds: float = Field(
        10,
        gt=0,
        description="How long a run's next workflow task waits for the worker that ran its "
        "last one (which holds the run in its cache) before any worker takes it: after a "
        "worker dies, each of its runs in flight waits this long (the SDK's default, 10 s)",
    )
    shutdown_grace_seconds: float = Field(
        25,
        ge=0,
        description="On stop (SIGTERM), steps in flight get this long to finish before they are "
        "cancelled and retried elsewhere; keep it below the deployment's grace period",
    )
    # Worker versioning (runtime/versioning.py, docs/operating.md "Rolling out a change").
    build_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,250}$",
        description="This worker's build id (image tag, git sha): turns on worker versioning",
    )
    deployment_name: str = Field(
        "mnemos",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,250}$",
        description="Temporal worker deployment of the versioned workers",
    )
    versioning_behavior: Literal["auto_upgrade", "pinned"] = Field(
        "auto_upgrade",
        description="Versioned runs move to the current version (auto_upgrade) or stay (pinned)",
    )
    promote_on_start: bool = Field(
        False,
        description="A versioned worker makes its version the deployment's current one at start",
    )

    @field_validator("build_id", mode="before")
    @classmethod
    def _unset_when_empty(cls, value: object) -> object:
        return value or None  # BUILD_ID= (e.g. compose's ${MNEMOS_BUILD_ID:-}): unversioned

    @model_validator(mode="after")
    def _concurrency_needs_its_queue(self) -> TemporalSettings:
        if self.llm_concurrency is not None and not self.llm_task_queue:
            # On the main queue a cap would hold back the store steps and the workflows too.
            raise ValueError(
                "llm_concurrency caps the workers of the LLM queue: set llm_task_queue as well "
                "(e.g. MNEMOS_TEMPORAL__LLM_TASK_QUEUE=mnemos-llm)"
            )
        return self
