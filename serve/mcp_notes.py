"""The explicit note of MCP's ``remember`` tool, as a message of its session: one rule for both
doors (stdio and HTTP)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from memory.input_rules import require_storable
from memory.models import MessageIn

# What the tools say a note without a user is, so that nobody expects the offline rules to read it.
WITHOUT_USER = (
    "Without user_id the note is the agent's own, recorded as a system message: a model reads it "
    "into agent memory; the offline provider reads only what people say and forms nothing from it."
)


def note_message(session_id: str, note: str, user_id: str | None) -> MessageIn:
    """The note as its user's message, or the agent's system message without one (a user message
    without a user id would be a guest's, which makes the session a group chat). Its id is the
    note's hash: the same note told twice is recorded once."""
    require_storable(note, "the note")
    digest = hashlib.sha256(f"{session_id}\0{user_id}\0{note}".encode()).hexdigest()
    return MessageIn(
        message_id=f"note-{digest[:24]}",
        role="user" if user_id else "system",
        content=note,
        created_at=datetime.now(UTC),
        user_id=user_id,
    )
