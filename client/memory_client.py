"""What an agent backend imports: record messages, trigger formation, read memory.

memory = await MemoryClient.connect()
await memory.register_agent(AgentConfig(agent_id="eve", name="Eve"))
await memory.record_messages("eve", "s1", [MessageIn(...), ...])
await memory.maybe_form_memories("eve", "s1")          # never blocks on formation
xml = await memory.memory_context("eve", "s1", user_id="alice")
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import TypeAdapter
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.service import RPCError

from client import tools
from client.failures import (
    UNCONSOLIDATED,
    UNFORMED,
    erased_meanwhile,
    failed_for_provider,
    runs_left,
)
from client.formation_triggers import FormationTriggers, check_id
from client.management import MemoryManager, MemoryStats, ScopeConsolidationStatus
from client.metrics import ClientMetrics, client_meter
from client.results import ForgetResult, SessionEnd
from memory.context_cache import ContextCache
from memory.embedding import make_embedder
from memory.embedding.base import Embedder
from memory.errors import InvalidInputError, NotFoundError
from memory.input_rules import misdated
from memory.models import AgentConfig, Id, MessageIn, RecordOutcome, ScopeKey, SessionInfo
from memory.prompt_budget import PROMPT_FIELDS, check_agent_fits
from memory.rag import search_facts
from memory.search_results import SearchResult
from memory.settings import Settings, get_settings
from memory.store import MemoryStore, open_store
from memory.store.rules.agents import changed_agent
from memory.triggers import HeldTriggers
from runtime.connection import connect
from runtime.erasure import delete_user_executions
from runtime.starts import start_session_end
from workflows.naming import consolidation_workflow_id, formation_workflow_id

_ID = TypeAdapter(Id)
_MESSAGES = TypeAdapter(list[MessageIn])


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _read_by(session: SessionInfo, user_id: str | None) -> SessionInfo:
    """The agent's view of a session as a turn of ``user_id`` reads it: a view holding no user
    yet (nothing recorded, or only the agent's own greeting or note) has the asking user as its
    one participant, since that turn is theirs and it is recorded after the answer. A view that
    holds a user, and the people of the whole session (another user, a guest: a group chat), are
    left as they are, so the asking user never reads their memory where somebody else spoke."""
    if user_id is None or session.user_ids:
        return session
    return session.model_copy(update={"user_ids": (user_id,)})


class MemoryClient(FormationTriggers):
    def __init__(
        self,
        temporal: Client,
        store: MemoryStore,
        settings: Settings,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.temporal = temporal
        # What "now" is for this client: message dates are checked against it and the ages in
        # contexts and search results ("3d ago") count from it. A replay of a dated conversation
        # (bench/quality.py) asks "as of" its own time.
        self.clock = clock
        self.store = store
        self.settings = settings
        self._embedder = embedder
        self.context_cache = ContextCache()
        self.metrics = ClientMetrics(client_meter(temporal))
        self.held_triggers = HeldTriggers(settings.formation.trigger_hold_seconds)

    @classmethod
    async def connect(cls, settings: Settings | None = None) -> MemoryClient:
        settings = settings or get_settings()
        return cls(
            await connect(settings.temporal, codec=settings.codec),
            await open_store(settings),
            settings,
        )

    async def close(self) -> None:
        if self._embedder is not None:
            await self._embedder.close()
        await self.store.close()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:  # loaded on first search: context-only callers never pay for it
            self._embedder = make_embedder(self.settings)
        return self._embedder

    # ------------------------------------------------------------ agents and messages

    async def register_agent(self, config: AgentConfig) -> None:
        """Register the agent, or replace its whole configuration. InvalidInputError, nothing
        written, when its persona and memory instructions leave a small model (the configured
        models.context_tokens) no room for a window's reflections (memory/prompt_budget.py)."""
        check_agent_fits(self.settings, config)
        await self.store.upsert_agent(config)

    async def update_agent(self, agent_id: str, **changes: object) -> AgentConfig:
        """Change some fields of a registered agent (``user_memory_enabled=False``), the others
        keep their value, even when another change of other fields runs at once (the store
        sets them in its transaction: MemoryStore.update_agent). Returns the configuration
        written. NotFoundError for an unknown agent, InvalidInputError for a field or value
        the configuration does not admit (a persona too long for a small model's context among
        them: register_agent); nothing written. A change of ``user_memory_enabled`` or
        ``agent_memory_enabled`` holds for what is recorded from then on: what was recorded
        before forms under the switches then (memory/switch_marks.py)."""
        agent_id = check_id("agent_id", agent_id)
        await self._check_fits(agent_id, changes)
        updated = await self.store.update_agent(agent_id, changes)
        if updated is None:
            raise NotFoundError(f"agent {agent_id!r} is not registered")
        return updated

    async def _check_fits(self, agent_id: str, changes: Mapping[str, object]) -> None:
        """The changed configuration's fit (check_agent_fits), read before the store's transaction:
        nothing to read on a hosted model, or when no text the prompts carry changes."""
        if self.settings.models.context_tokens is None or not PROMPT_FIELDS & changes.keys():
            return
        current = await self.store.get_agent(agent_id)
        if current is not None:  # unknown: the store's NotFoundError says so
            check_agent_fits(self.settings, changed_agent(current, changes))

    async def record_messages(
        self,
        agent_id: str,
        session_id: str,
        messages: Sequence[MessageIn | dict[str, Any]],
        *,
        may_join: Collection[str] | None = None,
    ) -> RecordOutcome:
        """Store new messages, idempotent by message_id (an id held with another content, role
        or user id raises ConflictError). Invalid input (an empty batch, empty or
        control-character content, bad ids, a ``created_at`` before 1970 or a day ahead) raises
        InvalidInputError; nothing written.
        ``may_join``: the agents the caller acts for (an API key's); a session holding any other
        agent raises NotFoundError, checked in the transaction that writes (None: no check)."""
        await self._agent(agent_id)
        check_id("session_id", session_id)
        now = self.clock()
        parsed = self.checked_messages(messages, now)
        cfg = self.settings.formation
        return await self.store.record_messages(
            session_id,
            agent_id,
            parsed,
            weights={r: cfg.weight(r) for r in ("user", "agent", "tool", "system", "other")},
            chars_per_token=cfg.chars_per_token,
            now=now,
            may_join=may_join,
        )

    def checked_messages(
        self, messages: Sequence[MessageIn | dict[str, Any]], now: datetime | None = None
    ) -> list[MessageIn]:
        """The messages parsed and checked as record_messages checks them, writing nothing:
        InvalidInputError naming the offset of the first one refused."""
        try:
            parsed = _MESSAGES.validate_python(list(messages))
        except ValueError as e:
            raise InvalidInputError(f"invalid message: {e}") from e
        at = now or self.clock()
        for offset, m in enumerate(parsed):
            if (why := misdated(m.created_at, at)) is not None:
                raise InvalidInputError(f"invalid message at offset {offset}: {why}")
        return parsed

    # ------------------------------------------------------------ session lifecycle

    async def on_session_start(
        self, agent_id: str, session_id: str, user_id: str | None = None
    ) -> str:
        """The memory context for the first turn of a session, which need not have messages yet."""
        agent = await self._agent(agent_id)
        session = await self._turn_session(agent_id, session_id, user_id)
        return await self._context(agent, session, user_id)

    async def _turn_session(
        self, agent_id: str, session_id: str, user_id: str | None
    ) -> SessionInfo:
        """The session as a turn of this agent sees it, recorded into or not: a backend records a
        turn after its answer, so the first turn's context and searches come before any message.
        The agent's own view once it recorded there; before, an empty view beside every person
        the session already holds (another agent's users and guests make it a group chat, whose
        user memory is off, memory/scopes.py); either as ``user_id`` reads it (``_read_by``).
        Nothing is written."""
        check_id("session_id", session_id)
        if user_id is not None:
            check_id("user_id", user_id)
        session = await self.store.get_session(session_id, agent_id)
        if session is None:
            whole = await self.store.get_session(session_id)
            session = SessionInfo(
                session_id=session_id,
                agent_ids=(agent_id,),
                created_at=self.clock(),
                session_user_ids=whole.user_ids if whole else (),
                has_guests=whole.has_guests if whole else False,
            )
        return _read_by(session, user_id)

    async def _context(self, agent: AgentConfig, session: SessionInfo, user_id: str | None) -> str:
        xml = await self.context_cache.get(
            self.store,
            self.settings,
            agent=agent,
            session=session,
            user_id=user_id,
            now=self.clock(),
        )
        self.metrics.observe_cache(self.context_cache)
        return xml

    async def end_session(self, agent_id: str, session_id: str) -> WorkflowHandle[Any, SessionEnd]:
        """Mark the session ended and start its EndSession workflow (one per agent and session,
        started with a signal: a second call reaches the run going, which then forms again what
        was said before this call), without waiting for it. The
        workflow forms what is left of the session, below the thresholds too, then consolidates
        its session memory whatever the buffer size. Marked ended in the store first, so the
        cold-sessions job finishes the session should the workflow never run."""
        await self._agent(agent_id)
        session = await self._session(session_id, agent_id)
        now = self.clock()
        await self.store.end_session(session_id, agent_id, now)
        return await start_session_end(self.temporal, self.settings, session, agent_id, now)

    async def on_session_end(self, agent_id: str, session_id: str) -> SessionEnd:
        """``end_session``, waiting for what it formed and consolidated. A wait that breaks raises
        but loses nothing: the workflow goes on by itself. The session memory is kept for
        ``sessions.ended_retention_days``, then purged by the cold-sessions job. An end whose
        formation or consolidation failed for its provider raises ProviderError saying which; one
        whose session a forget erased before the end ran, NotFoundError."""
        handle = await self.end_session(agent_id, session_id)
        try:
            return await handle.result()
        except WorkflowFailureError as err:
            # EndSession fails with "<id> ended FAILED": the provider's answer is in that run.
            since = (await handle.describe()).start_time
            for workflow_id, kept in (
                (formation_workflow_id(agent_id, session_id), UNFORMED),
                (
                    consolidation_workflow_id(ScopeKey.session(agent_id, session_id)),
                    UNCONSOLIDATED,
                ),
            ):
                failed = await failed_for_provider(self.temporal, workflow_id, since, kept)
                if failed is not None:
                    raise failed from err
            if gone := erased_meanwhile(err, f"session {session_id!r} of agent {agent_id!r}"):
                raise gone from err
            raise

    # ------------------------------------------------------------ reading memory

    async def memory_context(
        self, agent_id: str, session_id: str, user_id: str | None = None
    ) -> str:
        """The <MemoryContext> XML for this turn ("" when there is no memory yet); NotFoundError
        for a session with no recorded message (its first turn: ``on_session_start``)."""
        agent = await self._agent(agent_id)
        session = await self._session(session_id, agent_id)
        if user_id is not None:
            check_id("user_id", user_id)
        return await self._context(agent, _read_by(session, user_id), user_id)

    async def search_facts(
        self,
        agent_id: str,
        queries: str | Sequence[str],
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        top_k: int | None = None,
        debug: bool = False,
        touch: bool = True,
    ) -> SearchResult:
        """The facts this turn may see, best first. ``session_id``: the turn's session, recorded
        into or not (the first turn searches before its messages are recorded): it sees what
        ``on_session_start`` shows. ``touch=False``: the hits are not counted as used (the memory
        page's search box)."""
        agent = await self._agent(agent_id)
        if user_id is not None:
            check_id("user_id", user_id)
        session = await self._turn_session(agent_id, session_id, user_id) if session_id else None
        with self.metrics.timed_search():
            return await search_facts(
                self.store,
                self.embedder,
                self.settings,
                agent=agent,
                session=session,
                user_id=user_id,
                queries=[queries] if isinstance(queries, str) else list(queries),
                top_k=top_k,
                debug=debug,
                now=self.clock(),
                touch=touch,
            )

    # ------------------------------------------------------------ the search_facts tool

    def search_facts_tool(
        self, api: Literal["openai", "openai_responses", "gemini"] = "openai"
    ) -> dict[str, Any]:
        """The tool definition to hand to the agent's model (002: agents with memory get it)."""
        build = {
            "openai": tools.openai_tool,
            "openai_responses": tools.openai_responses_tool,
            "gemini": tools.gemini_tool,
        }
        return build[api](self.settings.rag)

    async def handle_search_facts(
        self,
        arguments: str | dict[str, Any],
        *,
        agent_id: str,
        session_id: str | None,
        user_id: str | None,
    ) -> str:
        """Execute the model's ``search_facts`` call; the text to return as the tool result.
        ``session_id`` may be a session with no recorded message yet (the first turn)."""
        return await tools.handle_tool_call(
            self, arguments, agent_id=agent_id, session_id=session_id, user_id=user_id
        )

    # ------------------------------------------------------------ monitoring and management (002 "Monitoring")

    @property
    def manager(self) -> MemoryManager:
        """Facts, reflections and blobs for a backend's own memory UI (the CLI uses the same)."""
        return MemoryManager(self.store, self.embedder, self.settings)

    async def memory_stats(
        self, agent_id: str, user_id: str | None = None, session_id: str | None = None
    ) -> MemoryStats:
        """Per scope: word count and version of the blob, buffered reflections, facts."""
        return await self.manager.stats(agent_id, user_id, session_id)

    async def consolidation_status(
        self, agent_id: str, user_id: str | None = None, session_id: str | None = None
    ) -> list[ScopeConsolidationStatus]:
        """Per scope: buffer size against the consolidation threshold."""
        return await self.manager.consolidation_status(agent_id, user_id, session_id)

    # ------------------------------------------------------------ erasure (issue 15)

    async def forget_user(self, agent_id: str | None, user_id: str) -> ForgetResult:
        """Erase a user (of one agent, or of every agent with None) from the store, then their
        closed workflow executions from Temporal (their id and payloads are in those), with
        those of the session memory the store deleted."""
        check_id("user", user_id)
        counts = await self.manager.forget_user(user_id, agent_id=agent_id)
        executions = None
        # Executions are found by their MnemosUserId search attribute and their workflow ids:
        # none without the attributes (a namespace without them is not queried).
        if self.settings.temporal.search_attributes:
            sessions = [key for c in counts for key in c.session_scopes]
            try:
                executions = await delete_user_executions(
                    self.temporal, user_id, agent_id, sessions
                )
            except RPCError as err:
                raise runs_left(err, sessions) from err
        return ForgetResult(agents=counts, workflow_executions_deleted=executions)
