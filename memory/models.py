"""The domain's data: what comes in, what is stored, what goes out. Validated at the edges."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool

from memory.input_rules import (
    NO_CONTROL,
    READABLE,
    StorableStr,
    WholeInt,
    plain_name,
    readable_content,
)
from memory.model_types import FactScope as FactScope
from memory.model_types import Id as Id
from memory.model_types import InputDatetime as InputDatetime
from memory.model_types import Role as Role
from memory.model_types import UtcDatetime as UtcDatetime
from memory.model_types import UtcOffsetMinutes
from memory.settings_scope import Scope

# The highest tier an agent may have (mnemos check-model checks the models it chooses).
MAX_TIER = 10


class DomainModel(BaseModel):
    """Every domain record: unknown fields refused, immutable once made."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# An integer a store keeps (a seq, a count, a version, an epoch): signed 64-bit, what SQLite's
# INTEGER, PostgreSQL's bigint and BSON's int64 all hold. Python's are unbounded; a bigger one
# failed in the driver mid-write (after the earlier writes of an import). Only the range, no
# tighter bound: no store returns a value outside it, so data already stored reads as before.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def fits_int64(value: int) -> int:
    """A pydantic validator: ``value`` unchanged, or ValueError when no store can hold it."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{value} does not fit a signed 64-bit integer (what a store holds)")
    return value


# A validator rather than Field(ge=, le=): in Annotated, those would replace a field's own
# bounds (seq's ge=1) instead of adding to them.
StoredInt = Annotated[int, AfterValidator(fits_int64)]


# ---------------------------------------------------------------- agents, sessions, messages


class AgentConfig(DomainModel):
    """An agent as registered by its backend; the prompts use its name, persona and instructions."""

    agent_id: Id
    name: StorableStr = Field(min_length=1, max_length=200)
    persona: StorableStr = Field("", max_length=4000)
    memory_instructions: StorableStr = Field(
        "", max_length=4000, description="Extra guidance for what to remember"
    )
    user_memory_enabled: StrictBool = True
    agent_memory_enabled: StrictBool = True
    tier: WholeInt = Field(
        0, ge=0, le=MAX_TIER, description="0 = standard models, ≥1 = premium models"
    )


class MessageIn(DomainModel):
    """One conversation message as the backend records it. ``message_id`` makes recording idempotent.

    ``content`` must hold more than whitespace and no control character but tab, newline and
    carriage return. ``created_at`` must lie between 1970-01-01 and a day after the recording time
    (memory.input_rules.misdated, checked when recorded)."""

    message_id: Id
    role: Role
    content: Annotated[StorableStr, AfterValidator(readable_content)] = Field(
        min_length=1, max_length=100_000, json_schema_extra={"pattern": READABLE}
    )
    created_at: InputDatetime
    user_id: Id | None = Field(
        None, description="Who said it (role user, other) or, on another role, whom it is for"
    )
    name: Annotated[StorableStr, AfterValidator(plain_name)] | None = Field(
        None,
        max_length=200,
        description="Display name of the speaker",
        json_schema_extra={"pattern": NO_CONTROL},
    )


class StoredMessage(DomainModel):
    session_id: Id
    seq: StoredInt = Field(ge=1, description="Position in the session, assigned by the store")
    message_id: Id
    role: Role
    content: str
    created_at: UtcDatetime
    user_id: Id | None = None
    name: str | None = None
    agent_id: Id | None = Field(None, description="The agent that recorded it")
    # The offset from UTC created_at was sent with, the speaker's clock (memory.dates.in_offset):
    # "tomorrow" is counted in its calendar. None for messages stored before it was kept: UTC.
    utc_offset_minutes: UtcOffsetMinutes | None = None


class SessionInfo(DomainModel):
    session_id: Id
    agent_ids: tuple[Id, ...] = ()
    user_ids: tuple[Id, ...] = ()
    created_at: UtcDatetime
    last_message_at: UtcDatetime | None = None
    ended_at: UtcDatetime | None = None
    # In one agent's view (user_ids: its participants, memory/speakers.py), every user of the
    # session: the group-chat rule counts them all, since they may read what this agent answers.
    session_user_ids: tuple[Id, ...] = ()
    # A guest (role "user", no user id) spoke in the session, to any agent: in every view of it.
    has_guests: bool = False

    @property
    def is_group(self) -> bool:
        """More than one person in the session: user-scoped memory is off (002 rule 3). A guest
        is a person: beside a user they make a group, though nobody knows who they are; a
        guest alone changes nothing (user memory needs a user)."""
        users = len({*self.user_ids, *self.session_user_ids})
        return users > 1 or (users == 1 and self.has_guests)


class SessionAgentState(DomainModel):
    """Formation state of one agent in one session: the cursor and what is pending after it."""

    session_id: Id
    agent_id: Id
    cursor_seq: StoredInt = Field(0, ge=0, description="Last message seq formed into memory")
    last_seq: StoredInt = Field(0, ge=0, description="Last message seq recorded")
    pending_messages: StoredInt = Field(0, ge=0)
    pending_weighted_tokens: float = Field(0, ge=0)
    last_message_at: UtcDatetime | None = None
    formations: StoredInt = Field(0, ge=0, description="Formations committed")
    # {user: seq}: theirs up to seq not this agent's to form (store/rules/withheld.py; unsent)
    withheld: dict[str, StoredInt] = Field(default_factory=dict, exclude=True)
    # ((seq, user memory, agent memory), ...): the switches its messages up to each seq were
    # recorded under, and those of its messages since the last (memory/switch_marks.py; unsent)
    switch_marks: tuple[tuple[int, bool, bool], ...] = Field(default=(), exclude=True)
    recorded_under: tuple[bool, bool] | None = Field(default=None, exclude=True)


class RecordOutcome(DomainModel):
    inserted: int
    duplicates: int
    state: SessionAgentState


# ---------------------------------------------------------------- scope keys


class ScopeKey(DomainModel):
    """Where a reflection or a consolidated blob belongs. Session memory is per agent too."""

    scope: Scope
    agent_id: Id
    user_id: Id | None = None
    session_id: Id | None = None

    @classmethod
    def agent(cls, agent_id: str) -> ScopeKey:
        return cls(scope="agent", agent_id=agent_id)

    @classmethod
    def user(cls, agent_id: str, user_id: str) -> ScopeKey:
        return cls(scope="user", agent_id=agent_id, user_id=user_id)

    @classmethod
    def session(cls, agent_id: str, session_id: str) -> ScopeKey:
        return cls(scope="session", agent_id=agent_id, session_id=session_id)

    @classmethod
    def of(
        cls, scope: Scope, agent_id: str, *, user_id: str | None, session_id: str | None
    ) -> ScopeKey:
        """The key of ``scope``, taking the user or the session it needs from the ids given."""
        return cls(
            scope=scope,
            agent_id=agent_id,
            user_id=user_id if scope == "user" else None,
            session_id=session_id if scope == "session" else None,
        )

    @property
    def key(self) -> str:
        """A stable string: the unit of serialized consolidation and of cache versions."""
        match self.scope:
            case "agent":
                return f"agent:{self.agent_id}"
            case "user":
                return f"user:{self.agent_id}:{self.user_id}"
            case "session":
                return f"session:{self.agent_id}:{self.session_id}"

    def model_post_init(self, _context: object) -> None:
        if self.scope == "user" and (self.user_id is None or self.session_id is not None):
            raise ValueError("a user scope key needs user_id and no session_id")
        if self.scope == "session" and (self.session_id is None or self.user_id is not None):
            raise ValueError("a session scope key needs session_id and no user_id")
        if self.scope == "agent" and (self.user_id is not None or self.session_id is not None):
            raise ValueError("an agent scope key takes neither user_id nor session_id")


# ---------------------------------------------------------------- facts


# Most message ids one fact or reflection cites: a fact is a sentence or two, rarely more.
MAX_SOURCES = 20

SourceIds = Annotated[tuple[str, ...], Field(max_length=MAX_SOURCES)]


class FactRevision(DomainModel):
    """A replaced version of a fact, with the provenance it had."""

    version: StoredInt
    content: str
    changed_at: UtcDatetime
    reason: str = ""
    # Its messages' session (ids are unique per session only); None: stored before this field.
    source_session_id: Id | None = None
    source_message_ids: SourceIds = ()
    formation_id: str | None = None
    said_at: UtcDatetime | None = None
    said_utc_offset_minutes: UtcOffsetMinutes | None = None  # its speaker's clock, as Fact's


class Fact(DomainModel):
    fact_id: str
    agent_id: Id
    user_id: Id | None = None
    scope: FactScope
    content: str
    hash: str = Field(
        description="sha256 of the normalised content; unique per agent, user and scope"
    )
    embedding_model: str
    source_session_id: Id | None = None
    source_message_ids: SourceIds = Field(
        (), description="The messages this version was formed from (their message_id)"
    )
    formation_id: str | None = Field(None, description="The formation that wrote this version")
    said_at: UtcDatetime | None = Field(
        None, description="When it was said: the time of its latest source message"
    )
    said_utc_offset_minutes: UtcOffsetMinutes | None = Field(
        None, description="That message's UTC offset: the day said is shown on it (None: UTC)"
    )
    formed_at: UtcDatetime
    updated_at: UtcDatetime
    version: StoredInt = 1
    previous_content: str | None = None
    history: tuple[FactRevision, ...] = ()
    invalidated_at: UtcDatetime | None = None
    invalidated_by: str | None = Field(None, description="The fact that replaced it (DELETE)")
    access_count: StoredInt = 0
    last_accessed_at: UtcDatetime | None = None


class ScoredFact(DomainModel):
    fact: Fact
    score: float = Field(
        description="Backend-normalised: cosine in [-1, 1] for vectors, BM25-like ≥ 0 for text"
    )


class FactFilter(DomainModel):
    """Which facts a search may see: pre-applied inside every search, never after."""

    agent_id: Id
    include_agent_scope: bool = True
    user_id: Id | None = Field(None, description="Include this user's user-scoped facts")


# ---------------------------------------------------------------- reflections and blobs


# A reflection's absorbed_into_version when no consolidation could take it: the provider refused
# its text (workflows/consolidate_scope.py says when that is shown). Out of the buffer, so it no
# longer holds back the scope; kept and listed, and editing it puts it back in the buffer
# (memory.store.rules.blobs). Blob versions start at 1.
SET_ASIDE = 0


class Reflection(DomainModel):
    reflection_id: str
    scope_key: ScopeKey
    content: str
    source_session_id: Id
    source_message_ids: SourceIds = Field(
        (), description="The messages it was formed from (their message_id)"
    )
    formation_id: str | None = Field(None, description="The formation that wrote it")
    said_at: UtcDatetime | None = Field(
        None,
        description="When it was said: the time of its latest source message (None: stored "
        "before it was kept)",
    )
    formed_at: UtcDatetime
    absorbed_into_version: StoredInt | None = Field(
        None,
        description="Blob version that absorbed it; None = buffered; 0 = set aside (no "
        "consolidation could take it; editing it puts it back in the buffer)",
    )

    @property
    def said_or_formed(self) -> datetime:
        """When it was said, as far as is known: formed_at for one stored before said_at was
        kept (formed from what had just been said, as it was then)."""
        return self.said_at or self.formed_at


def in_said_order(reflections: Iterable[Reflection]) -> list[Reflection]:
    """Reflections oldest said first: the order a reader takes as "the later, the newer". The
    store keeps them in the order they were formed, which a conversation recorded late (a
    backfill, a session the cold job forms after a newer one) puts after newer words.

    A formation's reflections move together, at the latest time any of them was said: its model
    weighed them against each other in one answer, in the order it gave them, so that order is
    kept (and reflections formed in the order they were said keep the order they were formed
    in: the same prompt as before). Stable: ties keep the order given."""
    listed = list(reflections)
    said = _said_times(listed)
    return sorted(listed, key=lambda r: said[_formed_with(r)])


def said_before(
    reflections: Iterable[Reflection], since: datetime | None
) -> tuple[list[Reflection], list[Reflection]]:
    """The reflections said before ``since`` (a blob's ``said_from``) and the others, each
    oldest said first. A formation's reflections stay together, at the latest time any of them
    was said, as in_said_order: one said at ``since`` or after is news to the blob."""
    said = in_said_order(reflections)
    if since is None:
        return [], said
    at = _said_times(said)
    return (
        [r for r in said if at[_formed_with(r)] < since],
        [r for r in said if at[_formed_with(r)] >= since],
    )


def _said_times(reflections: list[Reflection]) -> dict[str, datetime]:
    """When each formation's reflections were said: the latest of them."""
    said: dict[str, datetime] = {}
    for r in reflections:
        group = _formed_with(r)
        said[group] = max(said.get(group, r.said_or_formed), r.said_or_formed)
    return said


def _formed_with(r: Reflection) -> str:
    return r.formation_id or r.reflection_id


class ConsolidatedMemory(DomainModel):
    scope_key: ScopeKey
    content: str
    version: StoredInt = Field(ge=0)
    word_limit: StoredInt
    updated_at: UtcDatetime
    edited_by: Literal["consolidation", "manual"] = "consolidation"
    said_from: UtcDatetime | None = Field(
        None,
        description="When the earliest reflection it absorbed was said (None: not known, a "
        "blob stored before it was kept or imported without it): a reflection said before it, "
        "formed later (a conversation recorded late), is older than all the blob holds",
    )
