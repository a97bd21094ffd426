"""The formation half of MemoryClient: the turn's trigger (``maybe_form_memories``), "form now"
(``form_memories``), and the agent and session lookups both share. A base class of MemoryClient,
which holds the Temporal client, store, settings, metrics and held triggers it reads."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import TypeAdapter
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError

from client.failures import UNFORMED, provider_failure
from client.metrics import ClientMetrics
from client.results import FormationTrigger
from memory import tracing
from memory.errors import InvalidInputError, NotFoundError
from memory.logging import get_logger
from memory.lookup import require_agent, require_session
from memory.models import AgentConfig, Id, SessionInfo
from memory.settings import Settings
from memory.store import MemoryStore
from memory.triggers import HeldTriggers, formation_due
from runtime.starts import start_formation
from workflows.naming import formation_workflow_id
from workflows.summary import FormationSummary

_ID = TypeAdapter(Id)


def check_id(name: str, value: str) -> str:
    try:
        return _ID.validate_python(value)
    except ValueError as e:
        raise InvalidInputError(
            f"{name} {value!r} is not a valid id (letters, digits, _ . -; ≤ 128)"
        ) from e


class FormationTriggers:
    temporal: Client
    store: MemoryStore
    settings: Settings
    metrics: ClientMetrics
    held_triggers: HeldTriggers

    async def _agent(self, agent_id: str) -> AgentConfig:
        return await require_agent(self.store, check_id("agent_id", agent_id))

    async def _session(self, session_id: str, agent_id: str) -> SessionInfo:
        """The agent's own view of the session (its participants, its end)."""
        return await require_session(self.store, check_id("session_id", session_id), agent_id)

    # ------------------------------------------------------------ formation

    async def maybe_form_memories(
        self, agent_id: str, session_id: str, *, raise_errors: bool = False, force: bool = False
    ) -> FormationTrigger:
        """Start a formation when the thresholds are met (``force``: now, below them too, as an
        explicit note asks); formation runs in Temporal. Never fails a turn for Temporal's sake:
        when the start does not complete within ``temporal.schedule_wait_seconds`` (server down
        or slow), the trigger is deferred (logged, counted in ``mnemos_formations_deferred``)
        and returned as such. ``raise_errors``: raise the start's error (``TimeoutError`` past
        the wait) instead.

        Traced (when tracing is on) as the root of the formation's trace: the workflow start
        carries its span context to the worker."""
        with tracing.span(
            "maybe_form_memories", **{"mnemos.agent_id": agent_id, "mnemos.session_id": session_id}
        ) as span:
            trigger = await self._maybe_form_memories(agent_id, session_id, raise_errors, force)
            span.set_attribute("mnemos.formation.started", trigger.started)
            span.set_attribute("mnemos.formation.deferred", trigger.deferred)
            return trigger

    async def _maybe_form_memories(
        self, agent_id: str, session_id: str, raise_errors: bool, force: bool
    ) -> FormationTrigger:
        state = await self.store.get_session_agent_state(
            check_id("session_id", session_id), check_id("agent_id", agent_id)
        )
        if state is None:
            raise NotFoundError(f"session {session_id!r} has no messages for agent {agent_id!r}")
        if not force and not formation_due(state, self.settings.formation):
            return FormationTrigger(
                started=False,
                reason=f"{state.pending_messages} messages / {state.pending_weighted_tokens:.0f} weighted tokens pending",
            )
        if not force and self.held_triggers.holds(agent_id, session_id, state.cursor_seq):
            # Its formation has not committed since this process asked: asking again on every
            # turn would only cost Temporal and the workers a task each (memory.triggers).
            return FormationTrigger(
                started=False,
                workflow_id=formation_workflow_id(agent_id, session_id),
                reason="requested already: the formation underway forms these messages",
            )
        session = await self._session(session_id, agent_id)
        wait = self.settings.temporal.schedule_wait_seconds
        try:
            async with asyncio.timeout(wait):
                handle = await start_formation(
                    self.temporal, self.settings, session, agent_id, force=force
                )
        except (TimeoutError, RPCError) as err:
            if raise_errors:
                raise
            reason = "timeout" if isinstance(err, TimeoutError) else type(err).__name__
            get_logger(agent_id=agent_id, session_id=session_id).warning(
                "formation deferred: Temporal did not take the start", reason=reason, error=str(err)
            )
            self.metrics.formation_deferred(reason)
            return FormationTrigger(
                started=False, deferred=True, reason=f"deferred ({reason} within {wait:g} s)"
            )
        self.held_triggers.sent(agent_id, session_id, state.cursor_seq)
        reason = "asked to form now" if force else "threshold reached"
        return FormationTrigger(started=True, workflow_id=handle.id, reason=reason)

    async def form_memories(
        self, agent_id: str, session_id: str, *, force: bool = True, wait: bool = True
    ) -> FormationSummary | None:
        """Form now, below the thresholds too (force). With wait, returns the run's summary; a run
        that failed for its LLM or embedding provider raises ProviderError saying so (another
        failure raises temporalio's WorkflowFailureError)."""
        with tracing.span(
            "form_memories", **{"mnemos.agent_id": agent_id, "mnemos.session_id": session_id}
        ):
            await self._agent(agent_id)
            await self._session(session_id, agent_id)
            handle = await self._start_formation(agent_id, session_id, force=force)
            if not wait:
                return None
            try:
                return await handle.result()
            except WorkflowFailureError as err:
                if (failed := provider_failure(handle.id, err, UNFORMED)) is not None:
                    raise failed from err
                raise

    async def _start_formation(
        self, agent_id: str, session_id: str, *, force: bool
    ) -> WorkflowHandle[Any, FormationSummary]:
        return await start_formation(
            self.temporal,
            self.settings,
            await self._session(session_id, agent_id),
            agent_id,
            force=force,
        )
