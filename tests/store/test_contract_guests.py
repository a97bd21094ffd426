"""Contract: a guest (role "user", no user id) is a person. Beside a user they make a group
(SessionInfo.is_group), so the session is not that user's alone: the user's export holds only
their own messages of it (not the guest's words, nor the agent's replies the guest heard, nor its
session memory), and forget_user deletes only the user's messages there, keeping the session,
the guest's words, the replies and its session memory, for every agent or for one."""

from __future__ import annotations

import pytest

from memory.models import ScopeKey
from memory.store.base import MemoryStore
from tests.store.builders import at, msg, record, reflection

GUEST_WORDS = "I am a guest, my phone is 555-0101"
KEY = ScopeKey.session("a1", "g")


async def _group_with_a_guest(store: MemoryStore) -> None:
    """g (a1): u1, a guest, the agent's reply to both, a session reflection. s1 (a1): u1 alone."""
    await record(store, "g", "a1", [
        msg("x1", "I am u1", user_id="u1", seconds=1),
        msg("x2", GUEST_WORDS, user_id=None, seconds=2),
        msg("x3", "hello both, I noted 555-0101", role="agent", seconds=3),
    ])  # fmt: skip
    await record(store, "s1", "a1", [msg("y1", "u1 alone", user_id="u1", seconds=4)])
    await store.import_reflections([reflection(KEY, 0, "A guest gave a phone", session_id="g")])
    session = await store.get_session("g", "a1")
    assert session is not None and session.is_group and session.has_guests


@pytest.mark.parametrize("agent_id", ["a1", None])
async def test_a_users_export_holds_none_of_a_guests_session_but_their_own_words(
    store: MemoryStore, agent_id: str | None
) -> None:
    await _group_with_a_guest(store)

    data = await store.export_data(agent_id=agent_id, user_id="u1", messages=True)

    assert [m.message_id for m in data.messages] == ["x1", "y1"]
    assert [r.scope_key for r in data.reflections] == []
    without = await store.export_data(agent_id=agent_id, user_id="u1", messages=False)
    assert [r.scope_key for r in without.reflections] == []


@pytest.mark.parametrize("agent_id", ["a1", None])
async def test_forget_keeps_a_session_a_guest_spoke_in(
    store: MemoryStore, agent_id: str | None
) -> None:
    await _group_with_a_guest(store)

    [counts] = await store.forget_user("u1", agent_id=agent_id, at=at(100))

    # s1 goes whole; of g, only u1's message.
    assert (counts.sessions, counts.messages) == (1, 1 + 1)
    assert await store.get_session("s1") is None
    said = [m.message_id for m in await store.load_messages("g", 0, 10)]
    assert said == ["x2", "x3"]
    session = await store.get_session("g", "a1")
    assert session is not None and session.has_guests and session.user_ids == ()
    assert len(await store.list_reflections(KEY, include_absorbed=True)) == 1
