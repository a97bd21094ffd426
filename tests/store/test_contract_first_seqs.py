"""Contract: ``first_seqs``, the seq of each person's first message in a session, from which a
formation window tells when the session became a group chat (memory/group_start.py): every user
id a message carries, whatever its role, and the guests' (role "user" without a user id) under
None; a message of nobody (an agent's, a tool's) counts for no one."""

from __future__ import annotations

from memory.models import MessageIn
from memory.store.base import MemoryStore
from tests.store.builders import at, msg, record


def _said(message_id: str, role: str, user_id: str, seconds: float) -> MessageIn:
    """A message carrying a user id in a role ``msg`` gives none (an operator's, an answer's)."""
    return MessageIn.model_validate(
        {
            "message_id": message_id, "role": role, "content": "noted", "created_at": at(seconds),
            "user_id": user_id,
        }
    )  # fmt: skip


async def test_each_persons_first_message_and_the_guests_under_none(store: MemoryStore) -> None:
    await record(store, "g", "a1", [
        msg("x1", "hello", role="agent", seconds=1),
        msg("x2", "I am a guest", user_id=None, seconds=2),
        msg("x3", "I am u1", user_id="u1", seconds=3),
        msg("x4", "u1 again", user_id="u1", seconds=4),
        _said("x5", "other", "u2", 5),
        _said("x6", "agent", "u3", 6),
        msg("x7", "the guest again", user_id=None, seconds=7),
    ])  # fmt: skip

    assert await store.first_seqs("g") == {None: 2, "u1": 3, "u2": 5, "u3": 6}


async def test_a_session_of_nobody_or_none_holds_no_first_seqs(store: MemoryStore) -> None:
    await record(store, "quiet", "a1", [msg("y1", "hello", role="agent", seconds=1)])

    assert await store.first_seqs("quiet") == {}
    assert await store.first_seqs("never-recorded") == {}
