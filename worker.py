"""The mnemos worker's building blocks: formation, consolidation and cold-sessions workflows plus
their activities. At start-up it registers the search attributes and creates or updates the
cold-sessions schedule.

Run a worker with ``mnemos worker`` (settings from MNEMOS_* environment variables); tests, benches
and ``mnemos up`` build theirs from the same blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from activities.consolidation import ConsolidationActivities
from activities.formation import FormationActivities
from activities.heartbeat import HeartbeatInterceptor
from activities.session_end import SessionEndActivities
from activities.sessions import SessionActivities
from memory.deps import Deps, open_deps
from memory.logging import get_logger
from memory.settings import Settings
from runtime import versioning
from runtime.connection import connect, ensure_search_attributes
from runtime.health import serving_health
from runtime.metrics import MetricsInterceptor
from runtime.schedule import ensure_schedule
from workflows.cold_sessions import ColdSessionsWorkflow
from workflows.consolidate_scope import ConsolidateScopeWorkflow
from workflows.end_session import EndSessionWorkflow
from workflows.form_memories import FormMemoriesWorkflow

WORKFLOWS: Sequence[type] = (
    FormMemoriesWorkflow,
    ConsolidateScopeWorkflow,
    ColdSessionsWorkflow,
    EndSessionWorkflow,
)


def workflow_runner(sandbox: bool) -> WorkflowRunner:
    """The SDK's sandbox re-creates every run's modules and proxies what workflow code touches: it
    cost a quarter of the formation throughput (bench/formation.py, docs/operating.md), so workers
    run our workflows as plain Python. The guard stays where it finds bugs: every committed history
    replays in the sandbox (tests/workflows/test_replay.py), and so do the harness's workflow tests.
    What the per-run isolation protects, module state shared between runs, our workflow modules do
    not hold (tests/workflows/test_stateless_modules.py)."""
    return SandboxedWorkflowRunner() if sandbox else UnsandboxedWorkflowRunner()


def build_worker(
    client: Client, deps: Deps, settings: Settings, workflows: Sequence[type] = WORKFLOWS
) -> Worker:
    """The main queue's worker: the workflows and every activity. Versioned when the settings
    give a build id (runtime.versioning); ``workflows`` replaces the code (upgrade tests)."""
    formation = FormationActivities(deps)
    consolidation = ConsolidationActivities(deps, client)
    sessions = SessionActivities(deps, client)
    ending = SessionEndActivities(deps, client)
    return Worker(
        client,
        task_queue=settings.temporal.task_queue,
        workflows=list(workflows),
        workflow_runner=workflow_runner(settings.temporal.workflow_sandbox),
        activities=[
            formation.load_window,
            formation.extract_facts,
            formation.extract_piece_facts,
            formation.find_similar_facts,
            formation.decide_fact_changes,
            formation.extract_reflections,
            formation.add_facts_undecided,
            formation.commit_formation,
            consolidation.draft_consolidation,
            consolidation.apply_consolidation,
            consolidation.buffered_reflections,
            consolidation.buffered_batch,
            consolidation.set_aside_reflection,
            consolidation.request_consolidation,
            sessions.find_cold_sessions,
            sessions.start_cold_formations,
            sessions.form_cold_sessions,
            sessions.purge_ended_sessions,
            sessions.find_unfinished_ended_sessions,
            sessions.start_session_ends,
            ending.mark_session_ended,
            ending.start_session_formation,
            ending.start_session_consolidation,
            ending.formation_outcome,
            ending.run_progress,
            ending.consolidation_outcome,
        ],
        interceptors=[MetricsInterceptor(), HeartbeatInterceptor()],
        deployment_config=versioning.deployment_config(settings.temporal),
        graceful_shutdown_timeout=_grace(settings),
        sticky_queue_schedule_to_start_timeout=timedelta(
            seconds=settings.temporal.sticky_queue_seconds
        ),
    )


def build_llm_worker(client: Client, deps: Deps, settings: Settings) -> Worker | None:
    """Workers of the LLM queue, when one is configured: only the LLM-bound activities, at most
    ``llm_activities_per_second`` across every worker of the queue (the provider's quota), so the
    store steps and the workflows on the main queue never wait behind it.

    ``llm_concurrency`` caps the steps one worker runs at once. A local server with one slot
    answers one request at a time: without the cap, concurrent formations' calls queue at the
    server while their start-to-close timeouts run, and time out there; with it they wait in
    the task queue, where no timeout runs (no schedule-to-start timeout is set)."""
    queue = settings.temporal.llm_task_queue
    if not queue:
        return None
    formation = FormationActivities(deps)
    consolidation = ConsolidationActivities(deps, client)
    return Worker(
        client,
        task_queue=queue,
        activities=[
            formation.extract_facts,
            formation.extract_piece_facts,
            formation.decide_fact_changes,
            formation.extract_reflections,
            consolidation.draft_consolidation,
        ],
        max_task_queue_activities_per_second=settings.temporal.llm_activities_per_second,
        max_concurrent_activities=settings.temporal.llm_concurrency,
        interceptors=[MetricsInterceptor(), HeartbeatInterceptor()],
        deployment_config=versioning.deployment_config(settings.temporal),  # the same version
        graceful_shutdown_timeout=_grace(settings),
    )


def _grace(settings: Settings) -> timedelta:
    """A stopped worker lets the steps it runs finish (an LLM call is paid for, and cancelled it
    counts against the step's attempts) before it cancels them."""
    return timedelta(seconds=settings.temporal.shutdown_grace_seconds)


@contextlib.asynccontextmanager
async def running_worker(
    settings: Settings, deps: Deps | None = None, *, local: bool = False
) -> AsyncIterator[tuple[Client, Deps]]:
    """Connect, register the search attributes, ensure the cold-sessions schedule and run a worker
    for the duration of the block. ``deps`` replaces the providers and store the settings name
    (tests and benches pass fakes); they are closed on exit either way. ``local``: connect to the
    address of the settings only (the dev server of ``mnemos up``, ``runtime.connection``)."""
    log = get_logger(task_queue=settings.temporal.task_queue)
    client = await connect(settings.temporal, codec=settings.codec, local=local)
    added = await ensure_search_attributes(client) if settings.temporal.search_attributes else []
    schedule = (
        await ensure_schedule(client, settings) if settings.temporal.schedule_on_start else "off"
    )
    deps = deps or await open_deps(settings)
    log.info(
        "worker starting",
        llm=deps.llm.name,
        embedder=deps.embedder.model,
        search_attributes_added=added,
        cold_sessions_schedule=schedule,
        build_id=settings.temporal.build_id,
    )
    try:
        async with contextlib.AsyncExitStack() as workers:
            await workers.enter_async_context(build_worker(client, deps, settings))
            llm_worker = build_llm_worker(client, deps, settings)
            if llm_worker is not None:
                await workers.enter_async_context(llm_worker)
            if settings.temporal.build_id and settings.temporal.promote_on_start:
                await versioning.promote(client, settings.temporal)
                log.info("worker version made current", build_id=settings.temporal.build_id)
            # Last: its answer says the worker polls and its loop turns (runtime/health.py).
            await workers.enter_async_context(serving_health(settings.temporal.health_bind))
            yield client, deps
    finally:
        await deps.close()
        log.info("worker stopped")


async def run_worker(settings: Settings, stop: asyncio.Event, deps: Deps | None = None) -> None:
    """Run until ``stop`` is set."""
    async with running_worker(settings, deps):
        await stop.wait()
