"""The reads of an export (MemoryStore.export_data), one kind at a time, and which of them an
export needs, decided once for every backend: the messages only when asked for; the messages
withheld from the agent only with them, and of one agent (none are withheld from every agent);
the sessions holding a user's data only where rules.export.judges_sessions says the answer
depends on them, their message users from the messages when those were read, and their agents
only where one of one agent's messages lacks its recorder (rules.export.recorded_by consults
them for nothing else). A backend answers each read in its own query language, all inside one
read snapshot; rules.export.export_view makes the export of what they read."""

from __future__ import annotations

import abc

from memory.models import AgentConfig, ConsolidatedMemory, Reflection, StoredMessage
from memory.store.counts import Erasure, ExportData
from memory.store.rules.export import (
    Exported,
    Pairs,
    UserSessions,
    export_view,
    judges_sessions,
    users_of_messages,
)
from memory.store.rules.withheld import Withheld


class ExportReads(abc.ABC):
    """The reads of the export of ``agent_id``'s data (every agent's when None) and, with
    ``user_id``, of the user's: their facts, the reflections and blobs of their scope and of the
    sessions holding their data (those the user is a participant of, and those with a message
    carrying their id, whatever its role), and those sessions' messages."""

    def __init__(self, agent_id: str | None, user_id: str | None) -> None:
        self.agent_id = agent_id
        self.user_id = user_id

    @abc.abstractmethod
    async def agents(self) -> list[AgentConfig]:
        """By agent id."""

    @abc.abstractmethod
    async def facts(self) -> list[Exported]:
        """With their vectors, by insertion order (as MemoryStore.export_fact_ids)."""

    @abc.abstractmethod
    async def reflections(self) -> list[Reflection]:
        """Absorbed ones too, by formed_at, then insertion order."""

    @abc.abstractmethod
    async def blobs(self) -> list[ConsolidatedMemory]:
        """By scope key."""

    @abc.abstractmethod
    async def erasures(self) -> list[Erasure]:
        """The user's tombstones (every one's without a user), by user id, then agent key."""

    @abc.abstractmethod
    async def messages(self) -> list[StoredMessage]:
        """Those of the agent's sessions (of every session without an agent), by session id,
        then seq."""

    @abc.abstractmethod
    async def withheld(self) -> dict[str, Withheld]:
        """By session, the agent's SessionAgentState.withheld where it is not empty."""

    # The sessions holding the user's data, as rules.export.UserSessions holds them.

    @abc.abstractmethod
    async def participants(self) -> Pairs: ...

    @abc.abstractmethod
    async def message_users(self) -> Pairs: ...

    @abc.abstractmethod
    async def session_agents(self) -> Pairs: ...

    @abc.abstractmethod
    async def guest_sessions(self) -> list[str]: ...


async def read_export(reads: ExportReads, *, messages: bool, facts: bool) -> ExportData:
    """MemoryStore._export_data from ``reads``, inside the backend's read snapshot."""
    agent_id, user_id = reads.agent_id, reads.user_id
    data = ExportData(
        agents=await reads.agents(),
        facts=await reads.facts() if facts else [],
        reflections=await reads.reflections(),
        consolidated=await reads.blobs(),
        erasures=await reads.erasures(),
        messages=await reads.messages() if messages else [],
    )
    withheld = await reads.withheld() if messages and agent_id is not None else {}
    sessions = UserSessions()
    if user_id is not None and judges_sessions(data):
        said = users_of_messages(data.messages) if messages else await reads.message_users()
        unrecorded = agent_id is not None and any(m.agent_id is None for m in data.messages)
        agents = await reads.session_agents() if unrecorded else ()
        sessions = UserSessions(
            await reads.participants(), said, agents, await reads.guest_sessions()
        )
    return export_view(data, withheld, agent_id=agent_id, user_id=user_id, sessions=sessions)
