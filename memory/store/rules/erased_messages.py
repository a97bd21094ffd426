"""What of a session's messages a forget took, as an import judges a file's records of it
(rules.import_sessions, and the dry run: memory/lifecycle/dry_run.py), by the erasure epochs of
the tombstones the file does not know of (rules.import_erasures.unknown)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from memory.models import StoredMessage
from memory.store.rules.derived import said_by_guest
from memory.store.rules.erasure import ALL_AGENTS
from memory.store.rules.imports import Pair


def erased_in_session(epochs: Mapping[Pair, int], agent_ids: Sequence[str], user_id: str) -> bool:
    """Whether forget_user deleted the user's messages in a session of these agents: all of them
    go, whichever agent recorded them, when the user is forgotten for any agent of the session.
    A session of no known agent is checked against the all-agents erasure only."""
    return any(epochs.get((a, user_id), 0) > 0 for a in agent_ids or (ALL_AGENTS,))


def erased_message(
    epochs: Mapping[Pair, int], agent_ids: Sequence[str], message: StoredMessage, speaker: str
) -> bool:
    """Whether a forget deleted this message of ``speaker``'s conversation (``whose``): one its
    recorder forgot the speaker under (or every agent did: the effective epoch counts both); a
    forget under another agent keeps what another agent recorded (rules.withheld.holds: its own
    record), so it never refuses it (h234 D1: a store moved one agent's file at a time lost the
    other agent's side). A message stored without its recorder (older rows): any agent of the
    session, as before."""
    recorder = message.agent_id
    if recorder is not None and recorder in agent_ids:
        return erased_in_session(epochs, (recorder,), speaker)
    return erased_in_session(epochs, agent_ids, speaker)


def lone_user(users: Sequence[str], guests: bool, messages: Iterable[StoredMessage]) -> str | None:
    """The one person of a session of one user and no guest (stored, or among the file's
    messages), whose conversation the agents' replies are; None for any other session."""
    if len(users) != 1 or guests or any(said_by_guest(m) for m in messages):
        return None
    return users[0]


def whose(message: StoredMessage, alone: str | None) -> str | None:
    """Whose conversation a message is, for the erasure check: its user's, and in a session of
    one person (``lone_user``) the agents' replies too, which a forget of that user takes with
    them (rules.erasure._replies_gone): an older file brings back neither (h229 D8)."""
    if message.user_id is not None or said_by_guest(message):
        return message.user_id
    return alone


def gone_with_users(
    epochs: Mapping[Pair, int], agent_ids: Sequence[str], user_ids: Sequence[str]
) -> bool:
    """Whether forget_user deleted the session whole, with its agents' states and session memory:
    it had users, and each was forgotten for each of its agents (rules.erasure.plan_forget takes
    a session whole when its only user goes for its only agent, or for every agent). ``epochs``:
    the effective epoch of every (agent, user) pair, (ALL_AGENTS, user) for no known agent."""
    agents = agent_ids or (ALL_AGENTS,)
    return bool(user_ids) and all(epochs.get((a, u), 0) > 0 for a in agents for u in user_ids)
