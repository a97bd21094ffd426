"""Who took part in the sessions of an import's session memory, as its messages show: the store
judges in the import's transaction whether forget_user deleted such a session whole (its session
memory is then not imported; rules.imports._gone)."""

from __future__ import annotations

from memory.lifecycle.records import ImportBatch
from memory.models import ScopeKey, StoredMessage
from memory.store.counts import SessionPeople


def session_people(batch: ImportBatch) -> tuple[SessionPeople, ...]:
    """The sessions of the batch's session memory that the batch has messages of, each with the
    agents and users those show: the store judges in the import's transaction whether
    forget_user deleted the session whole (its session memory is then not imported). Session
    memory without messages in the batch, which cannot say who took part, is judged by the
    session tombstones a forget leaves (rules.erasure.session_tombstones) alone."""
    people = People()
    people.add(batch)
    return people.sessions()


class People:
    """session_people of records given one at a time, in any order: a file read in batches
    (import_file) tells its session memory the people of all its messages, as one batch would."""

    def __init__(self) -> None:
        self._blob_agents: dict[str, dict[str, None]] = {}  # session memory's agents, by session
        self._reflection_agents: dict[str, dict[str, None]] = {}
        self._agents: dict[str, dict[str, None]] = {}  # the messages', by session
        self._users: dict[str, dict[str, None]] = {}  # every session with messages, first seen

    def memory(self, key: ScopeKey, *, blob: bool) -> None:
        if key.scope == "session" and key.session_id is not None:
            by_session = self._blob_agents if blob else self._reflection_agents
            by_session.setdefault(key.session_id, {})[key.agent_id] = None

    def message(self, m: StoredMessage) -> None:
        users = self._users.setdefault(m.session_id, {})
        if m.user_id:
            users[m.user_id] = None
        if m.agent_id:
            self._agents.setdefault(m.session_id, {})[m.agent_id] = None

    def add(self, batch: ImportBatch) -> None:
        for b in batch.consolidated:
            self.memory(b.scope_key, blob=True)
        for r in batch.reflections:
            self.memory(r.scope_key, blob=False)
        for m in batch.messages:
            self.message(m.message)

    def sessions(self) -> tuple[SessionPeople, ...]:
        """Each session of the session memory with messages: its agents (the memory's first,
        blobs' then reflections', then the messages'), its users."""
        return tuple(
            (sid, tuple(self._agents_of(sid)), tuple(users))
            for sid, users in self._users.items()
            if sid in self._blob_agents or sid in self._reflection_agents
        )

    def _agents_of(self, sid: str) -> dict[str, None]:
        return (
            self._blob_agents.get(sid, {})
            | self._reflection_agents.get(sid, {})
            | self._agents.get(sid, {})
        )
