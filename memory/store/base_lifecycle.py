"""The part of the store contract that serves operators and other services rather than formation:
importing, exporting and forgetting (issue 15), who an agent talks with, and the API keys of
``mnemos serve``. ``MemoryStore`` (memory/store/base.py) extends it; the rules behind the writes
are the planners of memory/store/rules/, as for the rest of the contract."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from memory.api_keys import ApiKey
from memory.directory import AgentUser
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Reflection,
    ScopeKey,
    SessionInfo,
    StoredMessage,
)
from memory.store.counts import (
    BlobImport,
    Erasure,
    ExportData,
    ForgetCounts,
    ImportCounts,
    SessionPeople,
)
from memory.store.rules.export import Exported, in_order
from memory.store.rules.import_erasures import Known

Vector = npt.NDArray[np.float32]


class LifecycleContract(abc.ABC):
    # ------------------------------------------------------------ data lifecycle (issue 15)
    # Imports insert by deterministic id what is not there yet (a re-run inserts nothing, an
    # interrupted import resumes), one transaction per call, and never write a user who has an
    # erasure tombstone. See memory/lifecycle/README.md.

    @abc.abstractmethod
    async def import_agents(self, configs: Sequence[AgentConfig]) -> ImportCounts:
        """Insert each agent that does not exist; an existing one is left as it is."""

    @abc.abstractmethod
    async def import_facts(
        self, facts: Sequence[Fact], vectors: Sequence[Vector], *, known: Known = ()
    ) -> ImportCounts:
        """Insert each fact whose id is absent, with its history, previous content, invalidation
        and access counts, and its vector; skip a valid fact whose (agent, user, scope, hash) a
        valid fact holds (duplicate). Same model/dimension rule as commit_formation."""

    @abc.abstractmethod
    async def import_consolidated(
        self,
        blobs: Sequence[ConsolidatedMemory],
        *,
        sessions: Sequence[SessionPeople] = (),
        known: Known = (),
    ) -> dict[str, BlobImport]:
        """By scope key: "inserted" when the scope had no blob (its version bumped), "existing"
        for the same content and version (a re-run), "conflict" otherwise (the live blob wins),
        "forgotten" for a user erased, or for session memory of a session forget_user deleted
        whole: ``sessions`` says who took part in each (the file's messages), checked in the
        call's transaction with what the store holds of it."""

    @abc.abstractmethod
    async def import_reflections(
        self,
        reflections: Sequence[Reflection],
        *,
        sessions: Sequence[SessionPeople] = (),
        known: Known = (),
    ) -> ImportCounts:
        """Insert each reflection whose id is absent, absorbed_into_version as given; the counts
        carry the buffered count of each touched scope key. Forgotten: as import_consolidated."""

    @abc.abstractmethod
    async def import_erasures(self, rows: Sequence[Erasure]) -> ImportCounts:
        """Merge an export's erasure tombstones (rules.import_erasures): each row's epoch is
        written where it is above the stored one; ``existing`` counts the others. One
        transaction; never deletes what the store holds."""

    @abc.abstractmethod
    async def import_messages(
        self,
        messages: Sequence[StoredMessage],
        *,
        sessions_created: Mapping[str, datetime] | None = None,
        withheld: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None,
        cursors: Mapping[str, Mapping[str, int]] | None = None,
        switches: Mapping[str, Mapping[str, Mapping[int, tuple[bool, bool]]]] | None = None,
        known: Known = (),
    ) -> ImportCounts:
        """Insert by (session, message id), keeping seqs (a seq held by another message:
        conflict); create sessions, agents and users as needed (a session created at its time in
        ``sessions_created``, else at its first imported message's; a stored one keeps its own);
        move each touched agent's cursor to at least the highest imported seq (imported messages
        count as formed). ``withheld``: {session: {agent: {user: bound}}}, the file's withheld
        marks (rules.withheld.file_bounds), merged into the agents' own, never lowering one.
        ``cursors``: {session: {agent: cursor}}, the file's (rules.import_sessions.file_cursors):
        the agent's imported messages after it are not formed, and stay pending. ``switches``:
        {session: {agent: {seq: switches}}}, the memory switches the file says the agent recorded
        each message under (rules.import_sessions.file_switches): marks merged into the agent's
        own (memory/switch_marks.py), so those still to form form under them."""

    @abc.abstractmethod
    async def forget_user(
        self, user_id: str, *, agent_id: str | None, at: datetime
    ) -> list[ForgetCounts]:
        """Hard-delete the user's memories of one agent (None: of every agent, after a tombstone
        for all agents): facts with their history, user-scope reflections and blob, messages
        carrying the user's id whatever their role (sessions holding no other user's data go
        whole; of one agent, in a session other agents share, those another agent still holds
        stay, withheld from this one: rules.withheld), embedding-cache entries of their texts no
        other fact holds. One transaction per agent, each writing the erasure tombstone whose
        epoch a formation commit checks (FormationCommit.user_epochs)."""

    @abc.abstractmethod
    async def erasure_epochs(
        self, agent_id: str, user_ids: Sequence[str], *, known: Known = ()
    ) -> dict[str, int]:
        """Each user's erasure epoch for the agent (0: never forgotten). ``known``: the
        tombstones an imported file carries, which the epoch leaves out where the file knows of
        them (rules.import_erasures.unknown). The import calls take ``known`` too: a file's
        records are refused only for the forgets it does not know of."""

    @abc.abstractmethod
    async def forgotten_session_memory(
        self,
        keys: Sequence[ScopeKey],
        *,
        sessions: Sequence[SessionPeople] = (),
        known: Known = (),
    ) -> frozenset[str]:
        """The scope keys among ``keys`` of session memory forget_user deleted, which
        import_consolidated and import_reflections refuse as "forgotten" given the same
        ``sessions`` and ``known``: of a session tombstone (rules.erasure.session_tombstones)
        the file does not know of, or of a session whose users ``sessions`` and the store show
        forgotten (rules.imports.session_memory_gone). Read outside a transaction: what a dry
        run says (memory/lifecycle/dry_run.py), the import judging again in its own."""

    @abc.abstractmethod
    async def export_data(
        self, *, agent_id: str | None, user_id: str | None, messages: bool, facts: bool = True
    ) -> ExportData:
        """Everything ``mnemos export`` writes, filtered, in one read snapshot: agents; facts
        (invalidated ones too) with their vectors, unless ``facts`` is False (an export reads
        them a page at a time: export_fact_ids, export_facts); reflections (absorbed too);
        blobs; messages on request. With user_id: what forget_user of that user erases, nothing
        it keeps (rules.export.users_export): the user's facts and user-scope memory, the
        session-scope memory of the sessions the user was the only user of (not of a session
        another user shares), and of the messages the user's own (whatever their role), and the
        agent's only in sessions the user was the only user of; with agent_id too, of those only
        the ones that agent recorded (rules.export.recorded_by: another agent's records of a
        shared session are that agent's) and does not withhold (rules.withheld)."""

    @abc.abstractmethod
    async def export_fact_ids(self, *, agent_id: str | None, user_id: str | None) -> list[str]:
        """The ids of export_data's facts (of the agent, of the user; None: of all), in its
        order (insertion): what an export then reads a page at a time (export_facts)."""

    async def export_facts(self, fact_ids: Sequence[str]) -> list[Exported]:
        """The facts of these ids with their vectors, as export_data has them, in the order of
        ``fact_ids``; an id no longer stored is left out. A read of its own: an export reads a
        page of ids at a time (rules.export.EXPORT_PAGE), and the store serves other reads
        between pages. A fact changed since its id was read is read as it is now."""
        return in_order(fact_ids, await self._export_facts(fact_ids)) if fact_ids else []

    @abc.abstractmethod
    async def _export_facts(self, fact_ids: Sequence[str]) -> list[Exported]:
        """export_facts of at least one id, in any order."""

    # ------------------------------------------------------------ who an agent talks with

    # A page of no rows (limit <= 0) is empty without asking the database, as in MemoryStore.

    async def list_agent_users(self, agent_id: str, *, limit: int = 100) -> list[AgentUser]:
        """The users of the agent's sessions, each with how many of them they share with it and
        the latest activity (last message, else creation) of those; most recently active first,
        then by user id; at most ``limit``."""
        return await self._list_agent_users(agent_id, limit) if limit > 0 else []

    @abc.abstractmethod
    async def _list_agent_users(self, agent_id: str, limit: int) -> list[AgentUser]:
        """list_agent_users with limit > 0."""

    async def list_agent_sessions(
        self, agent_id: str, *, user_id: str | None = None, limit: int = 100
    ) -> list[SessionInfo]:
        """The sessions the agent takes part in (only those with ``user_id`` among their users,
        when given), most recently active (last message, else creation) first, then by session
        id; at most ``limit``."""
        return await self._list_agent_sessions(agent_id, user_id, limit) if limit > 0 else []

    @abc.abstractmethod
    async def _list_agent_sessions(
        self, agent_id: str, user_id: str | None, limit: int
    ) -> list[SessionInfo]:
        """list_agent_sessions with limit > 0, each session as the agent sees it (get_session
        with its agent_id)."""

    # ------------------------------------------------------------ API keys (mnemos serve)

    @abc.abstractmethod
    async def create_api_key(self, key: ApiKey) -> ApiKey:
        """Store a new key (its secret's hash only). ConflictError when the id is taken."""

    @abc.abstractmethod
    async def get_api_key(self, key_id: str) -> ApiKey | None: ...

    @abc.abstractmethod
    async def list_api_keys(self) -> list[ApiKey]:
        """Every key, revoked ones included, oldest first (then by id)."""

    @abc.abstractmethod
    async def revoke_api_key(self, key_id: str, *, at: datetime) -> ApiKey:
        """The key stops verifying. NotFoundError for an unknown id; revoking again keeps the
        first date."""
