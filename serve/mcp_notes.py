"""The explicit note of MCP's ``remember`` tool, as a message of its session, and its formation
started at once: one rule for both doors (stdio and HTTP)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone

from client.memory_client import MemoryClient
from client.results import FormationTrigger
from memory.errors import InvalidInputError
from memory.input_rules import require_storable
from memory.models import MessageIn, RecordOutcome

# What the tools say a note without a user is, so that nobody expects the offline rules to read it.
WITHOUT_USER = (
    "Without user_id the note is the agent's own, recorded as a system message: a model reads it "
    "into agent memory; the offline provider reads only what people say and forms nothing from it."
)


# What the tools say of the speaker's clock, which only the caller knows.
OFFSET_HELP = (
    "utc_offset_minutes: the speaker's UTC offset (540 for Tokyo, -300 for New York in winter), "
    "so that 'tomorrow' in the note is counted in the speaker's calendar; without it, in UTC's."
)
# The offsets clocks use: UTC-12:00 to UTC+14:00.
_OFFSETS = range(-12 * 60, 14 * 60 + 1)


def note_message(
    session_id: str, note: str, user_id: str | None, utc_offset_minutes: int | None = None
) -> MessageIn:
    """The note as its user's message, or the agent's system message without one (a user message
    without a user id would be a guest's, which makes the session a group chat), said now on the
    speaker's clock when the caller gives its offset. Its id is the note's hash: the same note
    told twice is recorded once."""
    require_storable(note, "the note")
    if utc_offset_minutes is not None and utc_offset_minutes not in _OFFSETS:
        raise InvalidInputError(
            f"utc_offset_minutes {utc_offset_minutes} is not a clock's offset (-720 to 840)"
        )
    zone = UTC if utc_offset_minutes is None else timezone(timedelta(minutes=utc_offset_minutes))
    digest = hashlib.sha256(f"{session_id}\0{user_id}\0{note}".encode()).hexdigest()
    return MessageIn(
        message_id=f"note-{digest[:24]}",
        role="user" if user_id else "system",
        content=note,
        created_at=datetime.now(zone),
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
