"""When a session became a group chat, and how a formation window up to one of its messages sees
the session: the one place of the rule that a window never spans that moment.

A window's scopes are those of the people who had spoken up to its last message
(``memory.scopes.formable_scopes`` and ``single_user`` read them from the session given here), and
a window that starts while the session had one person ends before the first message of a second
one, which forms in the next window, as a group's. So a private detail a user told while alone is
hers (user memory, which `forget` erases) however late its formation runs: formed after a second
user joined, it would otherwise be kept in the session memory the newcomer reads.

Who had spoken by then comes from the seq of each person's first message (``first_seqs`` of the
store); the same stored messages always give the same cut, so a window loaded again after a
failed attempt is the same window (its formation id names its range).
"""

from __future__ import annotations

from collections.abc import Mapping

from memory.models import SessionInfo
from memory.store.base import MemoryStore

# The seq of each person's first message: user ids, and None for the guests (MemoryStore.first_seqs).
type FirstSeqs = Mapping[str | None, int]


async def first_seqs(store: MemoryStore, session: SessionInfo) -> FirstSeqs:
    """The first seqs a window needs: none while the session is not a group (nothing to cut, and
    most sessions never read them)."""
    return await store.first_seqs(session.session_id) if session.is_group else {}


def as_of(session: SessionInfo, first: FirstSeqs, seq: int) -> SessionInfo:
    """The session as it was at message ``seq``: its people whose first message came by then. One
    the store holds no message of (nor ``first``, for a session that is no group) counts from
    the start: the safe side, a group sooner."""

    def came(person: str | None) -> bool:
        return first.get(person, 0) <= seq

    return session.model_copy(
        update={
            "user_ids": tuple(u for u in session.user_ids if came(u)),
            "session_user_ids": tuple(u for u in session.session_user_ids if came(u)),
            "has_guests": session.has_guests and came(None),
        }
    )


def group_since(session: SessionInfo, first: FirstSeqs) -> int | None:
    """The seq of the message from which the session is a group chat (``SessionInfo.is_group``),
    0 when it was one from its start; None while it is not."""
    if not session.is_group:
        return None
    # Every person counted by the end (as_of the last first seq is the session): one of these is.
    return next(s for s in sorted({0, *first.values()}) if as_of(session, first, s).is_group)


def window_end(after_seq: int, upto_seq: int, since: int | None) -> int:
    """The last message of a window (after_seq, upto_seq]: before the one that made the session a
    group, when the window starts before it."""
    if since is not None and after_seq + 1 < since <= upto_seq:
        return since - 1
    return upto_seq
