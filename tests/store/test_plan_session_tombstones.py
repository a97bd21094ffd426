"""The rules, pure: a forget leaves a tombstone of each session memory it deletes, which an import
of that memory meets whether or not the file has the session's messages; a guest keeps a session
from being the user's alone."""

from __future__ import annotations

from memory.models import ConsolidatedMemory, ScopeKey, SessionAgentState
from memory.store.rules.erasure import ForgetRequest, ForgetSnapshot, UserSession, plan_forget
from memory.store.rules.imports import (
    BlobImportSnapshot,
    ReflectionImportSnapshot,
    plan_import_consolidated,
    plan_import_reflections,
)
from memory.store.rules.lifecycle_writes import DeleteScope, DeleteSessions, PutErasure
from tests.store.builders import at, reflection


def _session(
    sid: str, agents: tuple[str, ...], *, guests: bool = False, messages: int = 1
) -> UserSession:
    """The user's one message, and ``messages`` in all (the others another agent's records)."""
    states = tuple(
        (SessionAgentState(session_id=sid, agent_id=a, cursor_seq=1, last_seq=1), 0, 0.0)
        for a in agents
    )
    return UserSession(sid, ("u1",), agents, messages, 1, states, last_seq=1, guests=guests)


def _forget(*sessions: UserSession, all_agents: bool = False) -> list[object]:
    snapshot = ForgetSnapshot(
        epoch=0, facts=[], reflections=0, blob=False, sessions=list(sessions),
        cached=frozenset(), in_use=frozenset(),
    )  # fmt: skip
    req = ForgetRequest("a1", "u1", all_agents=all_agents)
    return list(plan_forget(req, snapshot, at=at(0)).writes)


def _tombstones(writes: list[object]) -> list[str]:
    return [w.agent_key for w in writes if isinstance(w, PutErasure) and w.agent_key != "a1"]


def test_a_forget_leaves_a_tombstone_of_each_session_memory_it_deletes() -> None:
    lone, kept = _session("s1", ("a1",)), _session("s2", ("a1", "b1"), messages=2)

    writes = _forget(lone, kept)

    assert DeleteSessions(("s1",), ("a1:s1:",)) in writes
    assert DeleteScope("session:a1:s2") in writes  # s2 stays for b1, a1's memory of it goes
    assert _tombstones(writes) == ["session:a1:s1", "session:a1:s2"]
    assert all(w.user_id == "u1" for w in writes if isinstance(w, PutErasure))
    every = _forget(lone, kept, all_agents=True)
    assert _tombstones(every) == ["session:a1:s1", "session:a1:s2", "session:b1:s2"]


def test_a_session_a_guest_spoke_in_is_not_the_users_alone() -> None:
    writes = _forget(_session("g", ("a1",), guests=True))

    assert not any(isinstance(w, DeleteSessions | DeleteScope) and w != DeleteScope("user:a1:u1")
                   for w in writes)  # fmt: skip
    assert _tombstones(writes) == []


def test_an_import_meets_the_tombstone_of_the_session_memory() -> None:
    key = ScopeKey.session("a1", "s1")
    blob = ConsolidatedMemory(
        scope_key=key, content="Asthma talk", version=1, word_limit=50, updated_at=at(1)
    )
    erased = frozenset({key.key})

    blobs = plan_import_consolidated([blob], BlobImportSnapshot({}, {}, erased_scopes=erased))
    reflections = plan_import_reflections(
        [reflection(key, 1)], ReflectionImportSnapshot(frozenset(), {}, {}, erased_scopes=erased)
    )

    assert (blobs.result, blobs.writes) == ({key.key: "forgotten"}, ())
    assert (reflections.result.forgotten, reflections.writes) == (1, ())
    fresh = plan_import_consolidated([blob], BlobImportSnapshot({}, {}))
    assert fresh.result == {key.key: "inserted"}
