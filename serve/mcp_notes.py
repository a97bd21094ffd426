"""The explicit note of MCP's ``remember`` tool, as a message of its session, and its formation
started at once: one rule for both doors (stdio and HTTP)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from client.memory_client import MemoryClient
from client.results import FormationTrigger
from memory.input_rules import require_storable
from memory.models import MessageIn, RecordOutcome

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


async def form_note(
    memory: MemoryClient, agent_id: str, session_id: str, recorded: RecordOutcome
) -> FormationTrigger:
    """Start the formation of the note's session at once, below the thresholds too ("form
    now"), and never fail the call for Temporal's sake: the note is stored, so a start Temporal
    does not take within ``temporal.schedule_wait_seconds`` is deferred as a hot trigger's is
    (``MemoryClient.maybe_form_memories``, forced), and the next
    trigger or the cold-sessions job forms it. A note told again (a client's retry after an
    error) asks again while the session holds messages not yet formed: its first start may never
    have reached Temporal, and a start under the one workflow id never forms a range twice."""
    state = recorded.state
    if state.cursor_seq >= state.last_seq:
        return FormationTrigger(started=False, reason="formed already")
    return await memory.maybe_form_memories(agent_id, session_id, force=True)


def told(recorded: RecordOutcome, trigger: FormationTrigger) -> str:
    """What stdio's ``remember`` answers: the note recorded (or told before), and its formation."""
    noted = "noted" if recorded.inserted else "already noted"
    if trigger.started:
        return f"{noted}; forming in {trigger.workflow_id}"
    if trigger.deferred:
        return (
            f"{noted}; formation {trigger.reason}: Temporal did not take the start, the next "
            "formation of this session or the cold-sessions job forms it"
        )
    return noted
