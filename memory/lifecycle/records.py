"""Import records: what an import writes, whatever the source. Ids are derived from source ids (and,
where the source does not fix whose a record is, from the agent and user it is imported for), so
re-running an import finds its own records already there and writes nothing twice, and the same
source imported for another agent or user is imported for it (memory/lifecycle/placement.py)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from memory.context import one_line
from memory.ids import content_hash, normalize_text
from memory.model_types import UtcOffsetMinutes
from memory.models import (
    AgentConfig,
    FactRevision,
    FactScope,
    Id,
    ScopeKey,
    SourceIds,
    StoredMessage,
    UtcDatetime,
)
from memory.store.counts import Erasure

System = Literal["eden", "mem0", "mnemos"]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")

# A fact's or a reflection's text is one item: its whitespace (newlines too) is normalised to single
# spaces on import, as the management API normalises an edit, so it cannot pose as several items
# ("- [agent] Policy: ...") wherever it is shown. Text left blank is refused by checks.check_batch.
OneLine = Annotated[str, AfterValidator(one_line)]


class Record(BaseModel):
    """Every import record: strict and immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


OTHER_ID = (
    "A second id it may be stored under (see place): a mem0 fact's id of before ids named the "
    "agent and user (the source's alone); an export's record's id for its agent and user, when "
    "the store holds its own id for another (a file edited to another agent or user)"
)


class SourceRef(Record):
    """Where a record came from: kept with the plan and in logs, so a drop can be traced back."""

    system: System
    collection: str
    source_id: str

    def derived_id(self, prefix: str) -> str:
        """A stable id for what this source record becomes (same source → same id, every run),
        for a source that fixes whose the record is (an Eden document names its agent and user)."""
        return _digest(prefix, "import", self.system, self.collection, self.source_id)

    def owned_id(self, prefix: str, *owner: str | None) -> str:
        """A stable id for what this source record becomes for one owner (a fact's agent and
        user, a reflection's scope key), for a source that does not fix it: a mem0 memory naming
        no agent takes ``--agent``'s, and a file can be edited to another agent or user. Each
        owner gets its own record, where one id would make the second import "already there"."""
        parts = (*(o or "" for o in owner),)
        return _digest(
            prefix, "import", self.system, self.collection, self.source_id, "owner", *parts
        )


def _digest(prefix: str, *parts: str) -> str:
    return f"{prefix}_{hashlib.sha256(chr(0x1F).join(parts).encode()).hexdigest()[:24]}"


def is_id(value: str | None) -> bool:
    """Whether a source id can be a mnemos id (agent, user, session) as it is."""
    return value is not None and _ID.match(value) is not None


def as_utc(value: datetime) -> datetime:
    """Naive datetimes from BSON and old exports are UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class AgentImport(Record):
    """An agent the imported memories belong to. ``config`` None: register a placeholder named
    after the id when the agent does not exist yet (Eden and mem0 carry no agent settings)."""

    agent_id: Id
    config: AgentConfig | None = None


class FactImport(Record):
    fact_id: str
    agent_id: Id
    user_id: Id | None = None
    scope: FactScope
    content: OneLine = Field(min_length=1)
    formed_at: UtcDatetime
    updated_at: UtcDatetime
    version: int = Field(1, ge=1)
    previous_content: str | None = None
    history: tuple[FactRevision, ...] = ()
    invalidated_at: UtcDatetime | None = None
    invalidated_by: str | None = None
    access_count: int = Field(0, ge=0)
    last_accessed_at: UtcDatetime | None = None
    source_session_id: Id | None = None
    # Provenance (exports before it have none: they import with none).
    source_message_ids: SourceIds = ()
    formation_id: str | None = None
    said_at: UtcDatetime | None = None
    said_utc_offset_minutes: UtcOffsetMinutes | None = None  # exports before it have none: UTC
    embedding: list[float] | None = Field(
        None, description="The source's vector; reused only if embedding_model is the store's"
    )
    embedding_model: str | None = None
    other_id: str | None = Field(None, description=OTHER_ID)
    source: SourceRef

    @property
    def ids(self) -> tuple[str, ...]:
        return (self.fact_id,) if self.other_id is None else (self.fact_id, self.other_id)

    @property
    def owner(self) -> tuple[str, str | None]:
        return (self.agent_id, self.user_id)

    def under(self, record_id: str) -> Self:
        return self.model_copy(update={"fact_id": record_id})

    @property
    def hash(self) -> str:
        return content_hash(self.content)

    @property
    def dedup_key(self) -> tuple[str, str | None, str, str]:
        """The store's uniqueness rule for facts: one text per agent, user and scope."""
        return (self.agent_id, self.user_id, self.scope, self.hash)

    @model_validator(mode="after")
    def _scope_matches_user(self) -> Self:
        if (self.scope == "user") != (self.user_id is not None):
            raise ValueError("a user fact needs user_id; an agent fact takes none")
        return self


class ReflectionImport(Record):
    reflection_id: str
    scope_key: ScopeKey
    content: OneLine = Field(min_length=1)
    formed_at: UtcDatetime
    source_session_id: Id | None = None
    source_message_ids: SourceIds = ()
    formation_id: str | None = None
    said_at: UtcDatetime | None = Field(
        None, description="When it was said (None: files before it, read in the order formed)"
    )
    absorbed_into_version: int | None = Field(
        None,
        description="Version of the imported blob of the same scope that already holds it; "
        "None: buffered, the next consolidation absorbs it; 0: set aside (in no blob)",
    )
    other_id: str | None = Field(None, description=OTHER_ID)
    source: SourceRef

    @property
    def ids(self) -> tuple[str, ...]:
        return (
            (self.reflection_id,) if self.other_id is None else (self.reflection_id, self.other_id)
        )

    @property
    def owner(self) -> str:
        return self.scope_key.key

    def under(self, record_id: str) -> Self:
        return self.model_copy(update={"reflection_id": record_id})


class BlobPart(Record):
    """One piece of a blob that must be merged into one (Eden's agent memory shards)."""

    title: str
    content: str


class ConsolidatedImport(Record):
    scope_key: ScopeKey
    content: str = Field(min_length=1, description="Ready to store as is (parts concatenated)")
    version: int = Field(1, ge=1)
    word_limit: int = Field(ge=1)
    updated_at: UtcDatetime
    edited_by: Literal["consolidation", "manual"] = "consolidation"
    said_from: UtcDatetime | None = None  # ConsolidatedMemory's (None: not known)
    parts: tuple[BlobPart, ...] = Field(
        (), description="Pieces to merge with the consolidation LLM when there are several"
    )
    words_cut: int = Field(0, ge=0, description="Words the concatenation dropped at the limit")
    sources: tuple[SourceRef, ...]

    @property
    def needs_merge(self) -> bool:
        return len(self.parts) > 1


class MessageImport(Record):
    message: StoredMessage
    # When the session was created where it comes from (a mnemos export; None: unknown, the
    # session is created at its first message's time). Kept only when the import creates it.
    session_created_at: UtcDatetime | None = None
    # The agents a forget of its user under them withheld it from (a mnemos export;
    # memory.store.rules.withheld): the import withholds it from them again.
    withheld_from: tuple[Id, ...] = ()
    # The agents that had not formed it where it comes from (a mnemos export): the import leaves
    # it to form for them. None named: it counts as formed (other sources have no cursor).
    pending_for: tuple[Id, ...] = ()
    # The memory switches (user memory, agent memory) each agent recorded it under where it
    # comes from, where known, formed there or not (a mnemos export; memory/switch_marks.py): it
    # forms under them here too, also where an older file left it to form.
    recorded_under: dict[Id, tuple[bool, bool]] = Field(default_factory=dict)
    source: SourceRef


# An erasure tombstone's agent key (rules.erasure): an agent, "*" (every agent), or the scope key
# of a session memory a forget deleted ("session:agent:session").
_ID_PART = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}"
AgentKey = Annotated[
    str, StringConstraints(pattern=rf"^(\*|{_ID_PART}|session:{_ID_PART}:{_ID_PART})$")
]


class ErasureImport(Record):
    """An erasure tombstone of a mnemos export (store.counts.Erasure): ids, the epoch, when and
    the counts of what went, never content. Merged by epoch (rules.import_erasures)."""

    agent_key: AgentKey
    user_id: Id
    epoch: int = Field(ge=1)
    forgotten_at: UtcDatetime
    counts: dict[str, Any] = Field(default_factory=dict)
    source: SourceRef

    def stored(self) -> Erasure:
        """The tombstone as the store holds it (its source is the import's own)."""
        return Erasure(**self.model_dump(exclude={"source"}))


class Dropped(Record):
    """A source record deliberately not imported, and why (shown by --dry-run)."""

    source: SourceRef
    agent_id: str | None = None
    user_id: str | None = None
    reason: str = Field(description="Stable wording: the plan counts drops by reason")
    detail: str = ""


class ImportBatch(Record):
    """Everything one import writes (or, with --dry-run, would write)."""

    agents: tuple[AgentImport, ...] = ()
    facts: tuple[FactImport, ...] = ()
    reflections: tuple[ReflectionImport, ...] = ()
    consolidated: tuple[ConsolidatedImport, ...] = ()
    messages: tuple[MessageImport, ...] = ()
    erasures: tuple[ErasureImport, ...] = ()
    dropped: tuple[Dropped, ...] = ()

    @property
    def size(self) -> int:
        """The records it writes (what a progress bar counts)."""
        kinds = (self.agents, self.facts, self.reflections, self.consolidated, self.messages)
        return sum(map(len, kinds)) + len(self.erasures)

    def __add__(self, other: ImportBatch) -> ImportBatch:
        agents = {a.agent_id: a for a in (*self.agents, *other.agents)}
        return ImportBatch(
            agents=tuple(agents.values()),
            facts=self.facts + other.facts,
            reflections=self.reflections + other.reflections,
            consolidated=self.consolidated + other.consolidated,
            messages=self.messages + other.messages,
            erasures=self.erasures + other.erasures,
            dropped=self.dropped + other.dropped,
        )


def dedup_facts(facts: list[FactImport]) -> tuple[list[FactImport], list[Dropped]]:
    """Keep the first fact of each (agent, user, scope, text): the store would refuse the rest."""
    kept: dict[tuple[str, str | None, str, str], FactImport] = {}
    dropped = []
    for fact in facts:
        first = kept.setdefault(fact.dedup_key, fact)
        if first is not fact:
            dropped.append(
                Dropped(
                    source=fact.source,
                    agent_id=fact.agent_id,
                    user_id=fact.user_id,
                    reason="duplicate fact: same text for the same agent, user and scope",
                    detail=f"kept {first.source.collection} {first.source.source_id}",
                )
            )
    return list(kept.values()), dropped


def dedup_reflections(
    items: list[ReflectionImport],
) -> tuple[list[ReflectionImport], list[Dropped]]:
    seen: dict[tuple[str, str], ReflectionImport] = {}
    dropped = []
    for r in items:
        first = seen.setdefault((r.scope_key.key, normalize_text(r.content)), r)
        if first is not r:
            dropped.append(
                Dropped(
                    source=r.source,
                    agent_id=r.scope_key.agent_id,
                    user_id=r.scope_key.user_id,
                    reason="duplicate reflection: same text in the same scope",
                    detail=f"kept {first.source.collection} {first.source.source_id}",
                )
            )
    return list(seen.values()), dropped


_WORD = re.compile(r"\S+")


def concatenate(parts: Iterable[BlobPart], word_limit: int) -> tuple[str, int]:
    """Shards under a heading each, in order, cut at the word limit: the heuristic provider's
    merge (with an LLM the consolidation step merges ``parts`` instead). Returns (text, words cut)."""
    text = "\n\n".join(f"## {p.title}\n{p.content}" if p.title else p.content for p in parts)
    words = list(_WORD.finditer(text))
    if len(words) <= word_limit:
        return text, 0
    return text[: words[word_limit - 1].end()].rstrip() + " …", len(words) - word_limit
