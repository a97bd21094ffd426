"""The store contract: one async interface, implemented by SQLite, PostgreSQL and MongoDB.

Every write that matters for the guarantees is a single atomic call here: ``record_messages``
(idempotent by message id, keeping the per-(session, agent) counters; an agent's view of a
session, its cursor, counters, participants, end and purge, is its own); ``commit_formation``
(fact changes, buffered reflections and the cursor together, once per formation id);
``commit_consolidation`` (a blob replaced and its reflections marked absorbed together, only if
the blob is at the version the consolidation read). The contract tests in ``tests/store`` hold
every backend to this text. The writing calls are implemented once: pure planners in
``memory.store.rules`` decide, ``memory.store.planned`` runs them in each backend's transaction.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from functools import partial

from memory.formation_commit import FormationCommit, FormationCommitResult
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    FactFilter,
    MessageIn,
    RecordOutcome,
    Reflection,
    ScopeKey,
    ScoredFact,
    SessionAgentState,
    SessionInfo,
    StoredMessage,
)
from memory.store.base_lifecycle import LifecycleContract
from memory.store.base_lifecycle import Vector as Vector
from memory.store.base_manage import ManageContract
from memory.store.base_manage import ReembedItem as ReembedItem
from memory.store.rules.agents import changed_agent, check_agent_changes

# Where a page of cold sessions starts: after this (last_message_at, session, agent); None first.
type Cold = tuple[datetime, str, str] | None


class MemoryStore(ManageContract, LifecycleContract):
    """Async persistence for mnemos. Implementations must not block the event loop.

    A read of a page (``limit``) is written here once, with its keyword defaults and its rule
    that a page of no rows (limit <= 0) is empty without asking the database; each backend
    answers the rest with the read's abstract ``_`` query."""

    @abc.abstractmethod
    async def setup(self) -> None:
        """Create tables/collections and regular indexes. Idempotent."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    # ------------------------------------------------------------ agents

    @abc.abstractmethod
    async def upsert_agent(self, config: AgentConfig) -> None:
        """Register the agent, or replace its whole configuration."""

    @abc.abstractmethod
    async def get_agent(self, agent_id: str) -> AgentConfig | None: ...

    async def update_agent(
        self, agent_id: str, changes: Mapping[str, object]
    ) -> AgentConfig | None:
        """Set these fields (field: value) of the registered agent, the others keep their
        value; return the configuration written. Atomically: the fields are set on the
        configuration read in the writing transaction, so concurrent changes of different
        fields all hold (of one field, the last to commit). None, nothing written, for an
        unknown agent; InvalidInputError, nothing written, for the id, an unknown field or a
        value the configuration does not admit (rules.agents)."""
        check_agent_changes(changes)
        return await self._update_agent(agent_id, partial(changed_agent, changes=dict(changes)))

    @abc.abstractmethod
    async def _update_agent(
        self, agent_id: str, change: Callable[[AgentConfig], AgentConfig]
    ) -> AgentConfig | None:
        """In one writing transaction: the stored agent's configuration, ``change`` of it
        written in its place and returned; None, nothing written, without one."""

    # ------------------------------------------------------------ sessions and messages

    @abc.abstractmethod
    async def record_messages(
        self,
        session_id: str,
        agent_id: str,
        messages: Sequence[MessageIn],
        *,
        weights: dict[str, float],
        chars_per_token: float,
        now: datetime,
        may_join: Collection[str] | None = None,
    ) -> RecordOutcome:
        """Insert the messages not yet stored (by message id), in order, with the next seqs.

        Atomically: the session exists with ``agent_id`` among its agents; each of the session's
        agents gets pending_messages += 1 and pending_weighted_tokens += weight(role) *
        ceil(len(content) / chars_per_token) per new message, and the user_id of every new user
        message among its participants (in join order); last_message_at = max(created_at).
        An agent new to the session joins at its head: cursor = last_seq, nothing pending, no
        participants (what was said before it joined is not its to remember).
        With ``may_join`` (the agents the caller acts for, e.g. an API key's): NotFoundError and
        nothing written when the session holds an agent not among them, judged on what the
        transaction reads (two callers racing into a new session: the second to commit is
        refused). None: no such check.
        Returns the calling agent's state after the write.
        """

    @abc.abstractmethod
    async def get_session(self, session_id: str, agent_id: str | None = None) -> SessionInfo | None:
        """With ``agent_id``: that agent's view (None when it never recorded into the session):
        user_ids = its participants, ended_at = when it ended the session. Without: every user
        of the session, ended_at None (ending is per agent). has_guests (a guest spoke) is the
        session's in both."""

    @abc.abstractmethod
    async def get_session_agent_state(
        self, session_id: str, agent_id: str
    ) -> SessionAgentState | None: ...

    @abc.abstractmethod
    async def load_messages(
        self, session_id: str, after_seq: int, upto_seq: int
    ) -> list[StoredMessage]:
        """Messages with after_seq < seq <= upto_seq, in seq order."""

    @abc.abstractmethod
    async def first_seqs(self, session_id: str) -> dict[str | None, int]:
        """The seq of each person's first message in the session: of every user id a message
        carries (whatever its role: memory.speakers.participants), and under None of its
        guests' (role "user" without a user id); empty for an unknown session. When the
        session became a group chat follows from it (memory/group_start.py)."""

    @abc.abstractmethod
    async def get_messages(
        self, session_id: str, message_ids: Sequence[str], agent_id: str | None = None
    ) -> list[StoredMessage]:
        """The session's messages with these ids (a fact's sources), in seq order; unknown ids
        are left out, and with ``agent_id`` those withheld from it (rules.withheld)."""

    async def list_cold_sessions(
        self,
        *,
        idle_before: datetime,
        min_messages: int,
        min_weighted_tokens: float,
        after: Cold,
        limit: int,
        rest_before: datetime | None = None,
    ) -> list[SessionAgentState]:
        """(session, agent) states with last_message_at <= idle_before and pending_messages >= 1 and
        (pending_messages >= min_messages or pending_weighted_tokens >= min_weighted_tokens, or
        last_message_at <= rest_before: quiet so long that what is left forms however little),
        ordered by (last_message_at, session_id, agent_id) strictly after ``after``, at most ``limit``.
        Ended sessions are included (their remainder must still form)."""
        if limit <= 0:
            return []
        return await self._cold_sessions(
            idle_before, min_messages, min_weighted_tokens, after, limit, rest_before
        )

    @abc.abstractmethod
    async def _cold_sessions(
        self,
        idle_before: datetime,
        min_messages: int,
        min_tokens: float,
        after: Cold,
        limit: int,
        rest_before: datetime | None,
    ) -> list[SessionAgentState]:
        """list_cold_sessions with limit > 0, served by an index (a keyset page over it)."""

    @abc.abstractmethod
    async def end_session(self, session_id: str, agent_id: str, at: datetime) -> None:
        """The agent ended the session (other agents of it go on): its ended_at = at, not purged.
        NotFoundError when the agent never recorded into the session."""

    async def list_unfinished_ended_sessions(
        self, *, ended_before: datetime, after: tuple[str, str] | None, limit: int
    ) -> list[tuple[str, str]]:
        """(session_id, agent_id) of sessions ended at or before ``ended_before``, with no
        message after it (recording into an ended session leaves it ended: resumed, it is hot
        until it goes quiet), whose agent has unformed messages there or whose session scope
        still buffers unabsorbed reflections, ordered, strictly after ``after``, at most
        ``limit``: the ends the cold job finishes."""
        if limit <= 0:
            return []
        return await self._unfinished_ended_sessions(ended_before, after or ("", ""), limit)

    @abc.abstractmethod
    async def _unfinished_ended_sessions(
        self, ended_before: datetime, after: tuple[str, str], limit: int
    ) -> list[tuple[str, str]]:
        """list_unfinished_ended_sessions with limit > 0, strictly after ``after`` ("", "" for
        the first page: before every pair)."""

    @abc.abstractmethod
    async def purge_ended_sessions(self, ended_before: datetime, limit: int) -> list[str]:
        """Delete the session-scoped reflections and blobs of each (agent, session) the agent
        ended before the date, with no message since the date (recording into an ended session
        makes it purgeable again; another agent's session memory is left alone), oldest first, at
        most ``limit``; return their session ids, one per purged (agent, session)."""

    # ------------------------------------------------------------ embeddings cache

    @abc.abstractmethod
    async def put_embeddings(self, model: str, vectors: dict[str, Vector]) -> None:
        """Content-addressed cache: text hash -> vector, per model. Upsert."""

    @abc.abstractmethod
    async def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, Vector]: ...

    # ------------------------------------------------------------ facts

    @abc.abstractmethod
    async def get_facts(self, fact_ids: Sequence[str]) -> list[Fact]: ...

    async def vector_search(
        self, query: Vector, flt: FactFilter, *, limit: int, min_score: float = -1.0
    ) -> list[ScoredFact]:
        """Valid facts within ``flt`` by cosine similarity (score = cosine, in [-1, 1]), best first.

        The filter is applied inside the search. Raises EmbeddingMismatchError when the query's
        dimension differs from the stored facts'."""
        return await self._vector_search(query, flt, limit, min_score) if limit > 0 else []

    @abc.abstractmethod
    async def _vector_search(
        self, query: Vector, flt: FactFilter, limit: int, min_score: float
    ) -> list[ScoredFact]:
        """vector_search with limit > 0: at most ``limit`` facts scoring at least ``min_score``;
        none before the first fact (no embedding meta); rules.check_query_dimension against the
        meta, which raises EmbeddingMismatchError for a query of another dimension."""

    async def vector_searches(
        self, queries: Sequence[Vector], flt: FactFilter, *, limit: int, min_score: float = -1.0
    ) -> list[list[ScoredFact]]:
        """``vector_search`` of each query, in order: a formation's dedup candidates, one list per
        new fact."""
        if limit <= 0:
            return [[] for _ in queries]
        return await self._vector_searches(queries, flt, limit, min_score)

    async def _vector_searches(
        self, queries: Sequence[Vector], flt: FactFilter, limit: int, min_score: float
    ) -> list[list[ScoredFact]]:
        """vector_searches with limit > 0. A backend that can answer them in one read (one
        snapshot, one round trip) overrides this; the answers are the same."""
        return list(
            await asyncio.gather(*(self._vector_search(q, flt, limit, min_score) for q in queries))
        )

    async def text_search(self, query: str, flt: FactFilter, *, limit: int) -> list[ScoredFact]:
        """Valid facts within ``flt`` holding a query word (as rules.text splits and stems them),
        best first, ties the newer first (ranking.text_hits); score on one BM25-like scale (> 0,
        larger is better). Statistics (document count, average length, document frequencies) of
        the facts within ``flt`` only: a score never depends on what the caller may not see."""
        return await self._text_search(query, flt, limit) if limit > 0 else []

    @abc.abstractmethod
    async def _text_search(self, query: str, flt: FactFilter, limit: int) -> list[ScoredFact]:
        """text_search with limit > 0."""

    @abc.abstractmethod
    async def hand_deleted_since(
        self, agent_id: str, since: datetime, owners: Sequence[str]
    ) -> list[Fact]:
        """The agent's facts a person deleted (rules.versions.deleted_by_hand) at or after
        ``since`` whose user id is one of ``owners`` ("": no user id), without vectors: what a
        formation of statements said since must not bring back (pipeline/deleted_again.py)."""

    async def recent_facts(self, flt: FactFilter, *, since: datetime, limit: int) -> list[Fact]:
        """The context FIFO: valid facts said at or after ``since``, most recently said first.

        Recent means recently *said*: a fact formed today from an old conversation (an import, a
        backlog) is not recent. A fact's recency is its ``said_at``; a fact without one (stores
        and exports older than provenance) falls back to ``updated_at``, the last time it was
        stored, which is what recency meant for it before. Ties (facts said at the same instant):
        the later stored fact first."""
        return await self._recent_facts(flt, since, limit) if limit > 0 else []

    @abc.abstractmethod
    async def _recent_facts(self, flt: FactFilter, since: datetime, limit: int) -> list[Fact]:
        """recent_facts with limit > 0, selected by the store's index, not by post-filtering."""

    @abc.abstractmethod
    async def touch_facts(self, fact_ids: Sequence[str], at: datetime) -> None:
        """access_count += 1 and last_accessed_at = at for each id."""

    @abc.abstractmethod
    async def embedding_meta(self, *, fresh: bool = False) -> tuple[str, int] | None:
        """(model, dimension) of the stored fact vectors, or None before the first fact. Cached;
        ``fresh`` reads it again (a re-embed in another process may have switched the model)."""

    # ------------------------------------------------------------ formation

    @abc.abstractmethod
    async def commit_formation(self, commit: FormationCommit) -> FormationCommitResult:
        """Apply one formation atomically and exactly once.

        - A formation id already committed returns its stored result with already_committed=True.
        - The cursor of (session, agent) must equal expected_cursor, else ConflictError.
        - Every user-scope fact add and user reflection belongs to one of the agent's participants
          of the session, else InvalidInputError.
        - Fact ops: add (skip as duplicate when a valid fact of the same agent/user/scope has the
          same hash; revive an invalidated one with that hash; an add said before a person's
          delete of a fact that held its text in any version is that deleted fact: a duplicate;
          a merely similar one is added, rules.fact_ops), update (StaleDecisionError when the
          fact's version != expected_version or it is invalidated; keeps previous_content and history,
          version + 1), invalidate (StaleDecisionError on version mismatch; sets invalidated_at and
          invalidated_by), keep (a NONE: StaleDecisionError when the fact it was judged to repeat
          changed or was invalidated since; writes nothing). The embedding model/dimension must
          match embedding_meta, else EmbeddingMismatchError.
        - Reflections are inserted by id (existing ids are left alone).
        - cursor = new_cursor; pending counters recomputed from the messages after it; formations + 1;
          the versions of every touched scope key are bumped.
        - The window's degraded steps (commit.degraded) are recorded with its memories, each key
          once, in the same transaction (a forget_user after it finds them); a commit discarded
          for an erasure records none.
        Nothing is written when any check fails.
        """

    # ------------------------------------------------------------ reflections and blobs

    async def unabsorbed_reflections(
        self, key: ScopeKey, *, limit: int | None = None, newest_first: bool = False
    ) -> list[Reflection]:
        """The buffered reflections of ``key`` (absorbed_into_version None), oldest formed first
        (or newest); at most ``limit`` of them, all of them for None."""
        if limit is not None and limit <= 0:
            return []
        return await self._reflections(
            key, which="buffered", newest_first=newest_first, limit=limit
        )

    @abc.abstractmethod
    async def count_unabsorbed(self, key: ScopeKey) -> int: ...

    @abc.abstractmethod
    async def get_consolidated(self, key: ScopeKey) -> ConsolidatedMemory | None: ...

    @abc.abstractmethod
    async def commit_consolidation(
        self,
        key: ScopeKey,
        *,
        expected_version: int,
        content: str,
        word_limit: int,
        absorbed_ids: Sequence[str],
        at: datetime,
        edited_by: str = "consolidation",
        absorbed_hashes: Mapping[str, str] | None = None,
        said_from: datetime | None = None,
    ) -> ConsolidatedMemory:
        """Replace the blob (version expected_version + 1) and mark the reflections absorbed into it.
        ``said_from``: the new blob's (ConsolidatedMemory.said_from), as given.

        ConflictError when the blob is not at expected_version (0 = no blob yet), one of the
        reflections is already absorbed or unknown, or one named in ``absorbed_hashes`` (id:
        memory.ids.text_hash of the content the blob was drafted from) was edited since. Atomic.
        Bumps the scope key's version."""

    @abc.abstractmethod
    async def set_aside_reflection(
        self, key: ScopeKey, reflection_id: str, *, content_hash: str
    ) -> bool:
        """Take a buffered reflection of ``key`` out of the buffer (absorbed_into_version
        SET_ASIDE) when its content's memory.ids.text_hash is still ``content_hash``; False, and
        nothing written, otherwise. Bumps the scope key's version."""

    @abc.abstractmethod
    async def scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        """Change counters of scope keys (0 when never written): a cheap check for context caches."""
