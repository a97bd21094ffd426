"""Writing memory for the retrieval tests through the store contract, and a call-counting store.

Facts, reflections and blobs go in the way formation and consolidation put them there
(commit_formation, commit_consolidation), with WordHashEmbedder vectors. One setup session per
agent carries the commits; the sessions the tests read from are plain SessionInfo values.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from memory.formation_commit import FactAdd, FactInvalidate, FormationCommit
from memory.models import AgentConfig, FactScope, MessageIn, Reflection, ScopeKey, SessionInfo
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def at(*, days: float = 0, hours: float = 0, minutes: float = 0, seconds: float = 0) -> datetime:
    return T0 + timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


def agent(
    agent_id: str = "a1", *, user_memory: bool = True, agent_memory: bool = True
) -> AgentConfig:
    return AgentConfig(
        agent_id=agent_id,
        name=agent_id,
        user_memory_enabled=user_memory,
        agent_memory_enabled=agent_memory,
    )


def session(session_id: str = "s1", *users: str, agents: Sequence[str] = ("a1",)) -> SessionInfo:
    return SessionInfo(
        session_id=session_id, agent_ids=tuple(agents), user_ids=users, created_at=T0
    )


def agent_key(agent_id: str = "a1") -> ScopeKey:
    return ScopeKey.agent(agent_id)


def user_key(user_id: str = "u1", agent_id: str = "a1") -> ScopeKey:
    return ScopeKey.user(agent_id, user_id)


def session_key(session_id: str = "s1", agent_id: str = "a1") -> ScopeKey:
    return ScopeKey.session(agent_id, session_id)


class MemoryWriter:
    """Commits facts and reflections for one agent, and consolidated blobs for any key of it."""

    _formations = itertools.count(1)

    def __init__(self, store: MemoryStore, agent_id: str = "a1") -> None:
        self.store = store
        self.agent_id = agent_id
        self.embedder = WordHashEmbedder()
        self._session = f"setup-{agent_id}"
        self._started: set[str] = set()
        self._users: set[tuple[str, str]] = set()  # (session, user) pairs that have spoken

    async def _commit(
        self,
        when: datetime,
        ops: Sequence[FactAdd | FactInvalidate] = (),
        reflections: Sequence[Reflection] = (),
        session: str | None = None,
    ) -> None:
        session = session or self._session
        if session not in self._started:
            message = MessageIn(message_id="m1", role="other", content="setup", created_at=T0)
            await self.store.record_messages(
                session, self.agent_id, [message], weights={}, chars_per_token=4.0, now=T0
            )
            self._started.add(session)
        # User memory belongs to a participant of the session (#11): each owner says something.
        owners = {op.user_id for op in ops if isinstance(op, FactAdd) and op.user_id}
        owners |= {r.scope_key.user_id for r in reflections if r.scope_key.user_id}
        if new := sorted(u for u in owners if (session, u) not in self._users):
            spoken = [
                MessageIn(
                    message_id=f"u-{u}", role="user", content="setup", created_at=T0, user_id=u
                )
                for u in new
            ]
            await self.store.record_messages(
                session, self.agent_id, spoken, weights={}, chars_per_token=4.0, now=T0
            )
            self._users |= {(session, u) for u in new}
        # The cursor stays at 0 (allowed: new_cursor == expected_cursor), so every commit needs
        # its own formation id.
        await self.store.commit_formation(
            FormationCommit(
                formation_id=f"test-{next(self._formations)}",
                session_id=session,
                agent_id=self.agent_id,
                expected_cursor=0,
                new_cursor=0,
                embedding_model=self.embedder.model,
                fact_ops=list(ops),
                reflections=list(reflections),
                committed_at=when,
            )
        )

    async def _adds(
        self,
        facts: Sequence[tuple[str, FactScope, str | None, str]],
        said_at: datetime | None = None,
        sources: tuple[str, ...] = (),
    ) -> list[FactAdd]:
        batch = await self.embedder.embed([content for _, _, _, content in facts])
        return [
            FactAdd(
                fact_id=fact_id,
                scope=scope,
                user_id=user_id,
                content=content,
                embedding=batch.vectors[i].tolist(),
                source_message_ids=sources,
                said_at=said_at,
            )
            for i, (fact_id, scope, user_id, content) in enumerate(facts)
        ]

    async def facts(
        self,
        *facts: tuple[str, FactScope, str | None, str],
        when: datetime = T0,
        session: str | None = None,
        said_at: datetime | None = None,
        sources: tuple[str, ...] = (),
    ) -> None:
        """Add (fact_id, scope, user_id, content) facts in one commit at ``when``, formed in
        ``session`` (default: the writer's setup session) from the messages ``sources``, said
        at ``said_at`` (None: facts of a store older than said_at)."""
        await self._commit(when, await self._adds(facts, said_at, sources), session=session)

    async def replace(
        self, old_id: str, new: tuple[str, FactScope, str | None, str], when: datetime = T0
    ) -> None:
        """Invalidate a version-1 fact in favour of a new one (a DELETE decision)."""
        (add,) = await self._adds([new])
        invalidate = FactInvalidate(fact_id=old_id, expected_version=1, replaced_by=new[0])
        await self._commit(when, [add, invalidate])

    async def reflections(self, key: ScopeKey, *contents: str, start: datetime = T0) -> None:
        """Buffer reflections one minute apart, in this order, in one commit."""
        items = [
            Reflection(
                reflection_id=f"r-{key.key}-{next(self._formations)}",
                scope_key=key,
                content=content,
                source_session_id=self._session,
                formed_at=start + timedelta(minutes=i),
            )
            for i, content in enumerate(contents)
        ]
        await self._commit(start, reflections=items)

    async def blob(self, key: ScopeKey, content: str, when: datetime = T0) -> None:
        current = await self.store.get_consolidated(key)
        await self.store.commit_consolidation(
            key,
            expected_version=current.version if current else 0,
            content=content,
            word_limit=1000,
            absorbed_ids=[],
            at=when,
        )


class CountingStore:
    """Forwards to a store and counts the calls by method name (cast it to MemoryStore)."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not callable(target):
            return target

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return cast(Callable[..., Any], target)(*args, **kwargs)

        return counted

    def as_store(self) -> MemoryStore:
        return cast(MemoryStore, self)
