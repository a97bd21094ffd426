"""Tiny builders for the store tests: a fixed clock, hand-made 4-d unit vectors, short commits.

Timestamps are whole seconds so that every backend stores them exactly (MongoDB keeps ms).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from unittest.mock import patch

import numpy as np
import pytest

from memory.errors import StaleDecisionError
from memory.formation_commit import (
    AddRecheck,
    FactAdd,
    FactInvalidate,
    FactKeep,
    FactUpdate,
    FormationCommit,
    FormationCommitResult,
)
from memory.ids import content_hash, formation_id, reflection_id
from memory.models import AgentConfig, Fact, FactFilter, MessageIn, Reflection, ScopeKey
from memory.store.base import MemoryStore, Vector
from memory.store.rules import messages as message_rules

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
MODEL = "test-model"
WEIGHTS = {"user": 1.0, "agent": 0.5, "tool": 0.25, "system": 0.5, "other": 0.5}
CHARS_PER_TOKEN = 4.0

FactOp = FactAdd | FactUpdate | FactInvalidate | FactKeep


def at(seconds: float) -> datetime:
    """T0 + seconds."""
    return T0 + timedelta(seconds=seconds)


def unit(*values: float) -> list[float]:
    """A 4-d unit vector from up to four components (the rest are zero)."""
    padded = [*values, *([0.0] * (4 - len(values)))]
    norm = math.sqrt(sum(v * v for v in padded))
    return [v / norm for v in padded]


def vec(*values: float) -> Vector:
    return np.asarray(unit(*values), dtype=np.float32)


def msg(
    message_id: str,
    content: str = "hello there",
    *,
    role: str = "user",
    user_id: str | None = "u1",
    seconds: float = 0,
) -> MessageIn:
    return MessageIn.model_validate(
        {
            "message_id": message_id,
            "role": role,
            "content": content,
            "created_at": at(seconds),
            "user_id": user_id if role == "user" else None,
        }
    )


async def record(
    store: MemoryStore,
    session_id: str,
    agent_id: str,
    messages: Sequence[MessageIn],
    *,
    now_seconds: float | None = None,
) -> None:
    """Recorded at T0 + now_seconds; by default when the last of them was said (not before T0):
    a message dated ahead of its recording is stored as said then (input_rules)."""
    now = at(0) if now_seconds is None else at(now_seconds)
    if now_seconds is None and messages:
        now = max(now, *(m.created_at for m in messages))
    await store.record_messages(
        session_id,
        agent_id,
        messages,
        weights=WEIGHTS,
        chars_per_token=CHARS_PER_TOKEN,
        now=now,
    )


async def record_unmarked(
    store: MemoryStore, session_id: str, agent_id: str, messages: Sequence[MessageIn]
) -> None:
    """``record`` as a writer older than SessionInfo.has_guests did (a replica still running the
    previous version during a rolling upgrade): the same writes without MarkGuests, so a
    guest's message leaves the session unmarked."""
    with patch.object(message_rules, "said_by_guest", lambda message: False):
        await record(store, session_id, agent_id, messages)


async def record_before_marks(
    store: MemoryStore, session_id: str, agent_id: str, messages: Sequence[MessageIn]
) -> None:
    """``record`` as a writer older than the switch marks did (a store upgraded with these
    messages pending, or a replica of the previous version during the roll): no marks, no
    open stretch."""
    with patch.object(message_rules, "_switch_marks", lambda snapshot, caller: []):
        await record(store, session_id, agent_id, messages)


async def assert_guests_marked(store: MemoryStore) -> None:
    """Sessions "guests" (u1 and a guest) and "alone" (u1 and the agent), recorded by agent a1:
    in every view, the first has guests and is a group chat, the second neither."""
    for agent_id in (None, "a1"):
        guests = await store.get_session("guests", agent_id)
        alone = await store.get_session("alone", agent_id)
        assert guests is not None and guests.has_guests and guests.is_group
        assert alone is not None and not alone.has_guests and not alone.is_group


async def session_with_messages(
    store: MemoryStore, session_id: str = "s1", agent_id: str = "a1", count: int = 2
) -> None:
    """A session whose agent has ``count`` user messages pending (seqs 1..count), said by u1 and
    u2 in turn (so that both may own user memory of it)."""
    await record(
        store,
        session_id,
        agent_id,
        [
            msg(f"{session_id}-m{i}", seconds=i, user_id="u1" if i % 2 else "u2")
            for i in range(1, count + 1)
        ],
    )


def add(
    fact_id: str,
    content: str,
    embedding: list[float],
    *,
    scope: str = "user",
    user_id: str | None = "u1",
) -> FactAdd:
    return FactAdd.model_validate(
        {
            "fact_id": fact_id,
            "scope": scope,
            "user_id": user_id if scope == "user" else None,
            "content": content,
            "embedding": embedding,
        }
    )


def commit(
    *,
    session_id: str = "s1",
    agent_id: str = "a1",
    expected_cursor: int = 0,
    new_cursor: int = 1,
    ops: Sequence[FactOp] = (),
    reflections: Sequence[Reflection] = (),
    model: str = MODEL,
    seconds: float = 100,
    formation: str | None = None,
) -> FormationCommit:
    return FormationCommit(
        formation_id=formation or formation_id(session_id, agent_id, expected_cursor, new_cursor),
        session_id=session_id,
        agent_id=agent_id,
        expected_cursor=expected_cursor,
        new_cursor=new_cursor,
        embedding_model=model,
        fact_ops=list(ops),
        reflections=list(reflections),
        committed_at=at(seconds),
    )


def reflection(
    key: ScopeKey, index: int, content: str = "", *, seconds: float = 0, session_id: str = "s1"
) -> Reflection:
    return Reflection(
        reflection_id=reflection_id(f"{key.key}-test", key.scope, index),
        scope_key=key,
        content=content or f"reflection {index}",
        source_session_id=session_id,
        formed_at=at(seconds),
    )


def user_filter(
    agent_id: str = "a1", user_id: str | None = "u1", agent_scope: bool = True
) -> FactFilter:
    return FactFilter(agent_id=agent_id, user_id=user_id, include_agent_scope=agent_scope)


AGENT_KEY = ScopeKey(scope="agent", agent_id="a1")
USER_KEY = ScopeKey(scope="user", agent_id="a1", user_id="u1")


class Former:
    """Commits successive formations of one message each for (session, agent), tracking the
    cursor; the session is created with ``messages`` pending by ``start``."""

    def __init__(self, store: MemoryStore, session_id: str = "s1", agent_id: str = "a1") -> None:
        self.store = store
        self.session_id = session_id
        self.agent_id = agent_id
        self.cursor = 0

    async def start(self, messages: int = 6) -> Former:
        await session_with_messages(self.store, self.session_id, self.agent_id, messages)
        return self

    def next_commit(
        self, *ops: FactOp, reflections: Sequence[Reflection] = (), model: str = MODEL
    ) -> FormationCommit:
        return commit(
            session_id=self.session_id,
            agent_id=self.agent_id,
            expected_cursor=self.cursor,
            new_cursor=self.cursor + 1,
            ops=ops,
            reflections=reflections,
            model=model,
            seconds=100 + 10 * self.cursor,  # each formation later than the previous one
        )

    async def form(
        self, *ops: FactOp, reflections: Sequence[Reflection] = (), model: str = MODEL
    ) -> FormationCommitResult:
        result = await self.store.commit_formation(
            self.next_commit(*ops, reflections=reflections, model=model)
        )
        self.cursor += 1
        return result


# A mem0 fact imported while a formation is between reading its candidates (none) and committing:
# it keeps its source's updated_at, months before, and the formation restates it.
IMPORTED_TEXT = "Alice drinks green tea every single morning"
RESTATED_TEXT = "Alice drinks green tea each single morning"


def imported_long_ago(read: datetime) -> Fact:
    """The imported fact, its source's times 130 days before ``read``."""
    months_ago = read - timedelta(days=130)
    return Fact(
        fact_id="mem0-1", agent_id="a1", user_id="u1", scope="user", content=IMPORTED_TEXT,
        hash=content_hash(IMPORTED_TEXT), embedding_model=MODEL, formed_at=months_ago,
        updated_at=months_ago,
    )  # fmt: skip


async def assert_restatement_stale(
    store: MemoryStore, former: Former, read: datetime, fact_id: str
) -> None:
    """The formation's near-duplicate of what was imported after ``read`` is decided again (the
    re-check sees the import), and nothing of it is stored."""
    late = former.next_commit(add(fact_id, RESTATED_TEXT, unit(1, 0.1)))
    recheck = AddRecheck(candidates_read_at=read, seen={}, similarity=0.9)
    with pytest.raises(StaleDecisionError):
        await store.commit_formation(late.model_copy(update={"recheck": recheck}))
    assert await store.get_facts([fact_id]) == []


async def a_pending_session(store: MemoryStore) -> None:
    """Agent a1 with one message of u1 to form in session s1."""
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada"))
    await record(store, "s1", "a1", [msg("m1", "My email is ada@example.com")])
    await store.close()


async def assert_upgraded_session_marked(store: MemoryStore) -> None:
    """``a_pending_session``'s, in a file or database upgraded from before the marks of the memory
    switches: the start opens its stretch under the agent's switches then (what it was said
    under), and a change of a switch after it closes that stretch (memory/switch_marks.py)."""
    await store.setup()
    try:
        before = await store.get_session_agent_state("s1", "a1")
        await record(store, "s1", "a1", [msg("m2", "And my phone is 555-0100", seconds=2)])
        await store.update_agent("a1", {"user_memory_enabled": False})
        await record(store, "s1", "a1", [msg("m3", "Bye", seconds=3)])
        after = await store.get_session_agent_state("s1", "a1")
    finally:
        await store.close()
    assert before is not None and (before.switch_marks, before.recorded_under) == ((), (True, True))
    assert after is not None
    assert (after.switch_marks, after.recorded_under) == (((2, True, True),), (False, True))
