"""What the memory page shows of where a fact's current version came from: the messages it was
said in, if they are still stored, and whether a person edited its text since (an edit keeps the
sources of the version it replaced: memory/store/rules/versions.py)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any, NamedTuple

from memory import ids
from memory.models import Fact, StoredMessage
from memory.said import said_time
from memory.store.rules.export import recorded_by
from memory.store.rules.versions import edited_by_hand
from serve.services import Services


def utc_time(at: datetime, *, seconds: bool = False) -> str:
    """A time of the memory's own (formed, updated, last active), in UTC and saying so: beside
    a "Said" on the speaker's clock a bare time reads as that clock's."""
    shape = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    return f"{at.astimezone(UTC).strftime(shape)} UTC"


def speaker_time(at: datetime, minutes: int | None) -> str:
    """When something was said, on the speaker's clock, its zone always named (said_time names
    none for UTC, as the context and the CLI show it)."""
    shown = said_time(at, minutes)
    return shown if minutes else f"{shown} UTC"


def cited_since(f: Fact) -> datetime:
    """Since when the fact cites its current sources' session: its first formation, or the
    change after the last version that cited another session (a version formed in another
    session cites that session's messages only: memory/store/rules/versions.py)."""
    since = f.formed_at
    for r in f.history:
        if r.version < f.version and r.source_session_id not in (None, f.source_session_id):
            since = max(since, r.changed_at)
    return since


class Sources(NamedTuple):
    """The stored messages of a fact's current version the key may read (``shown``), and the ids
    of those it may not (``not_shown``)."""

    shown: list[StoredMessage]
    not_shown: list[str]


async def sources(svc: Services, f: Fact, agent_ids: Collection[str]) -> Sources:
    """The messages the fact's current version was formed from, if they are still stored, of
    those a key for ``agent_ids`` may read.

    Message ids are unique within a session only, and a session id is free again once the
    session is gone (a forget deletes it): another agent may then record a new session under the
    same id, with its own m1. So the session must be the one the fact was formed in: holding the
    fact's agent, and created before the fact cited it. In a shared session an agent forms
    memory of the messages the other agents record too, but not those a forget under it kept for
    the others (withheld); the page shows those another agent recorded only to a key for that
    agent too (recorded_by, as the export does): to a key for this agent alone the session is
    another's (serve.auth.foreign_session), and so are its words, which the fact's text only
    restates."""
    if not (f.source_session_id and f.source_message_ids):
        return Sources([], [])
    session = await svc.memory.store.get_session(f.source_session_id)
    if session is None or f.agent_id not in session.agent_ids:
        return Sources([], [])
    same = ids.formed_in(f.formation_id, f.source_session_id, session.created_at)
    if same is None:  # an id that cannot tell: by the clocks (the server's and the worker's)
        same = session.created_at <= cited_since(f)
    if not same:
        return Sources([], [])  # a later session under the same id
    sid, store = f.source_session_id, svc.memory.store
    stored = await store.get_messages(sid, f.source_message_ids, f.agent_id)
    ours = [m for m in stored if any(recorded_by(a, m, session.agent_ids) for a in agent_ids)]
    return Sources(ours, [m.message_id for m in stored if m not in ours])


async def fact_view(svc: Services, f: Fact, agent_ids: Collection[str]) -> dict[str, Any]:
    """The fact page's context: the fact, its sources a key for ``agent_ids`` may read and the
    ids of the others (``not_shown``), its hand edit if its text is one (``edited``: when, and
    the version the sources said), and when it was said, on its speaker's clock (``said``;
    ``clock`` shows each source message's time on its own)."""
    said = None if f.said_at is None else speaker_time(f.said_at, f.said_utc_offset_minutes)
    shown, not_shown = await sources(svc, f, agent_ids)
    return {
        "f": f, "sources": shown, "not_shown": not_shown, "edited": edited_by_hand(f),
        "said": said, "clock": speaker_time,
    }  # fmt: skip
