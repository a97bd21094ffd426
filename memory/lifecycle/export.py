"""``mnemos export``'s format: JSON Lines, one typed record a line, and its reader.

    {"type": "header", "format": "mnemos-export", "version": 2, ...}
    {"type": "agent", ...AgentConfig}
    {"type": "fact", ...Fact, "embedding": [...] | null}     # with history and previous content
    {"type": "reflection", ...Reflection}
    {"type": "consolidated", ...ConsolidatedMemory}
    {"type": "message", ...StoredMessage, "session_created_at": ..., "withheld_from": [...],
     "pending_for": [...], "recorded_under": {agent: [user, agent memory]}}
                                                             # only with --messages
    {"type": "erasure", "agent_key": ..., "user_id": ..., "epoch": n, "forgotten_at": ...,
     "counts": {...}}                                        # a forget's tombstone
    {"type": "end", "counts": {"fact": n, ...}}

Records carry the store's own ids, so importing an export into an empty store recreates the same
facts, reflections and blobs (and importing it twice writes nothing new). A fact or reflection
whose id the store holds for another agent, user or scope (a file edited to another agent or
user) is imported under an id derived from its own and its owner (``FactImport.other_id``,
records.place), so it is imported for them, and once. The ``end`` line's counts let the reader
tell a complete file from a truncated one.

A message line's ``session_created_at`` is when its session was created in the exporting store:
an import creating the session gives it that time, so that the ids of the formations that read
it (memory.ids.formation_id: they name the session's incarnation by it) still name this session
and the memory page finds a fact's messages. Files written before it have none: the session is
then created at its first message's time, as before.

A message line's ``withheld_from`` names the agents a forget of its user under them withheld it
from (memory.store.rules.withheld: kept for the session's other agents, not these agents' to form
or show): the import withholds it from them again, and they do not count its user among their
participants unless another message of the user is theirs. Files written before it have none:
nothing withheld, as before.

A message line's ``pending_for`` names the agents that had not formed it yet when the file was
written (their cursor before it: a live store's pending tail): the import leaves it, and every
later message of the session, to form for them (memory.store.rules.import_sessions), so a store
moved by export and import forms what the source had not. Files written before it (version 1)
and other sources have none: their messages count as formed, as before. Version 2 is this field:
a mnemos too old to know it refuses the file at its header, not at its first message line.

A message line's ``recorded_under`` gives, for each agent of its ``pending_for`` that knows them,
the memory switches (user memory on, agent memory on) it was recorded under there
(memory/switch_marks.py): the import marks them in the agent's state, so the message forms
under them, not under the switches of the store it lands in (an email told while user memory
was off does not become user memory after a move). A formed message needs none. Files written
before it (version 2 and older) have none: their messages form under the store's switches, as
before. Version 3 is this field, refused at the header by a mnemos too old to know it.

An ``erasure`` line is a forget's tombstone (rules.erasure: of an agent, of every agent, or of a
session memory it deleted; ids, epoch, time and counts, never content), of the export's agent
and user: the import merges it by epoch after the file's other records
(rules.import_erasures), so that a store moved by export and import still never imports the
forgotten user again, from an older file of theirs. Files written before it (version 3 and
older) have none: a moved store forgot who was forgotten. Version 4 is this line.

A record the import refuses (a user-scope fact without a user, a negative version or count) is a
bad line like one that does not parse: the reader names it (ExportFormatError), before anything
is written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Annotated, Final, Literal, TextIO

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from memory.errors import InvalidInputError
from memory.lifecycle.records import (
    AgentImport,
    ConsolidatedImport,
    ErasureImport,
    FactImport,
    ImportBatch,
    MessageImport,
    ReflectionImport,
    SourceRef,
)
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Id,
    Reflection,
    StoredMessage,
    UtcDatetime,
)
from memory.settings_errors import validation_line
from memory.store.counts import Erasure

FORMAT: Final = "mnemos-export"
# 2: message lines' pending_for (1: every message counts as formed); 3: their recorded_under;
# 4: erasure lines.
VERSION: Final = 4
_VERSIONS: Final = "v1/v2/v3/v4"  # those read: an older file imports as it always did


class HeaderLine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["header"] = "header"
    format: Literal["mnemos-export"] = FORMAT
    version: Literal[1, 2, 3, 4] = VERSION  # older files still import (no pending_for, marks)
    exported_at: UtcDatetime
    embedding_model: str | None = Field(None, description="The store's model (fact vectors)")
    agent_id: Id | None = Field(None, description="Filter: only this agent")
    user_id: Id | None = Field(None, description="Filter: only this user's memories")
    messages: bool = False


class AgentLine(AgentConfig):
    type: Literal["agent"] = "agent"


class FactLine(Fact):
    type: Literal["fact"] = "fact"
    embedding: list[float] | None = None


class ReflectionLine(Reflection):
    type: Literal["reflection"] = "reflection"


class ConsolidatedLine(ConsolidatedMemory):
    type: Literal["consolidated"] = "consolidated"


class MessageLine(StoredMessage):
    type: Literal["message"] = "message"
    session_created_at: UtcDatetime | None = Field(
        None, description="When the message's session was created (None: files before it)"
    )
    withheld_from: tuple[Id, ...] = Field(
        (), description="The agents a forget withheld it from (none: files before it)"
    )
    pending_for: tuple[Id, ...] = Field(
        (), description="The agents that had not formed it yet (none: formed, or files before it)"
    )
    recorded_under: dict[Id, tuple[bool, bool]] = Field(
        default_factory=dict,
        description="Of those, the memory switches (user, agent) each recorded it under "
        "(none: not known, or files before it)",
    )


class ErasureLine(Erasure):
    type: Literal["erasure"] = "erasure"


class EndLine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["end"] = "end"
    counts: dict[str, int]


Record = AgentLine | FactLine | ReflectionLine | ConsolidatedLine | MessageLine | ErasureLine
Line = Annotated[HeaderLine | Record | EndLine, Field(discriminator="type")]
_LINE: TypeAdapter[Line] = TypeAdapter(Line)


class ExportFormatError(InvalidInputError, ValueError):
    """A line of a file that is no export of this format: bad input, named by its line, and
    nothing written (the whole file is read before a write). ``line_no`` None: the file as a
    whole (it has no line to name: it is empty). The message is one line: a ValidationError is
    said by field (settings_errors.validation_line), not pydantic's own lines."""

    def __init__(self, line_no: int | None, message: str) -> None:
        super().__init__(message if line_no is None else f"export line {line_no}: {message}")
        self.line_no = line_no


def line(record: HeaderLine | Record | EndLine) -> str:
    return record.model_dump_json() + "\n"


def export_lines(
    header: HeaderLine, records: Iterable[Record], counts: Counter[str] | None = None
) -> Iterator[str]:
    """The file's lines, one at a time: header, records, then the end line with the counts
    (tallied into ``counts`` too). Lazy, so that a writer holds a line, not the file; and the end
    line comes only once every record is written: a writer that fails midway (a record that
    does not serialise) leaves a file without it, which read_export refuses as truncated."""
    tally = Counter[str]() if counts is None else counts
    yield line(header)
    for record in records:
        yield line(record)
        tally[record.type] += 1
    yield line(EndLine(counts=dict(tally)))


async def export_text(
    header: HeaderLine, records: AsyncIterable[Record], counts: Counter[str] | None = None
) -> AsyncIterator[str]:
    """export_lines of records read as they are written (a store's pages between them)."""
    tally = Counter[str]() if counts is None else counts
    yield line(header)
    async for record in records:
        yield line(record)
        tally[record.type] += 1
    yield line(EndLine(counts=dict(tally)))


def write_export(out: TextIO, header: HeaderLine, records: Iterable[Record]) -> dict[str, int]:
    """Header, records, then the end line with the counts; returns the counts."""
    counts: Counter[str] = Counter()
    for text in export_lines(header, records, counts):
        out.write(text)
    return dict(counts)


def read_export(lines: Iterable[str]) -> Iterator[HeaderLine | Record]:
    """Validated records in file order, the header first; ExportFormatError on the first bad
    line, or at the end of a file whose ``end`` line is missing or disagrees (truncated)."""
    counts: Counter[str] = Counter()
    ended: EndLine | None = None
    n = 0
    seen = False
    for n, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        seen = True
        if ended is not None:
            raise ExportFormatError(n, "data after the end line")
        try:
            parsed = _LINE.validate_json(text)
        except ValidationError as e:
            if n == 1:
                raise ExportFormatError(
                    n, f"not a {FORMAT} {_VERSIONS} header: {validation_line(e)}"
                ) from e
            raise ExportFormatError(n, validation_line(e)) from e
        if (n == 1) != isinstance(parsed, HeaderLine):
            raise ExportFormatError(n, "the header must be the first line, and only it")
        if isinstance(parsed, EndLine):
            ended = parsed
            continue
        if not isinstance(parsed, HeaderLine):
            try:
                # Converted here only to be checked: a record the import refuses is named by its
                # line, as one that does not parse, whoever reads the file (to_import converts).
                import_record(parsed)
            except ValidationError as e:
                raise ExportFormatError(n, f"{parsed.type}: {validation_line(e)}") from e
            counts[parsed.type] += 1
        yield parsed
    if not seen:
        raise ExportFormatError(None, f"the file is empty: no {FORMAT} header line")
    if ended is None:
        raise ExportFormatError(n, "no end line: the export is truncated")
    if dict(counts) != {k: v for k, v in ended.counts.items() if v}:
        raise ExportFormatError(n, f"records {dict(counts)} != end line counts {ended.counts}")


ImportRecord = (
    AgentImport | FactImport | ReflectionImport | ConsolidatedImport | MessageImport | ErasureImport
)


def _ref(collection: str, source_id: str) -> SourceRef:
    return SourceRef(system="mnemos", collection=collection, source_id=source_id)


def import_record(r: Record) -> ImportRecord:
    """An export's record as its import record, ids unchanged (ValidationError: not importable)."""
    match r:
        case AgentLine():
            config = AgentConfig.model_validate(r.model_dump(exclude={"type"}))
            return AgentImport(agent_id=r.agent_id, config=config)
        case FactLine():
            fields = r.model_dump(exclude={"type", "hash", "embedding_model"})
            model = r.embedding_model if r.embedding is not None else None
            source = _ref("facts", r.fact_id)
            return FactImport(
                **fields,
                embedding_model=model,
                other_id=source.owned_id("f", r.agent_id, r.user_id),
                source=source,
            )
        case ReflectionLine():
            source = _ref("reflections", r.reflection_id)
            return ReflectionImport(
                **r.model_dump(exclude={"type"}),
                other_id=source.owned_id("r", r.scope_key.key),
                source=source,
            )
        case ConsolidatedLine():
            return ConsolidatedImport(
                **r.model_dump(exclude={"type"}), sources=(_ref("consolidated", r.scope_key.key),)
            )
        case MessageLine():
            extra = {"type", "session_created_at", "withheld_from", "pending_for", "recorded_under"}
            return MessageImport(
                message=StoredMessage.model_validate(r.model_dump(exclude=extra)),
                session_created_at=r.session_created_at,
                withheld_from=r.withheld_from,
                pending_for=r.pending_for,
                recorded_under=r.recorded_under,
                source=_ref("messages", f"{r.session_id}:{r.message_id}"),
            )
        case ErasureLine():
            return ErasureImport(
                **r.model_dump(exclude={"type"}),
                source=_ref("erasures", f"{r.agent_key}:{r.user_id}"),
            )


def to_import(records: Iterable[HeaderLine | Record]) -> ImportBatch:
    """An export's records as import records, ids unchanged (read_export has checked each)."""
    converted = [import_record(r) for r in records if not isinstance(r, HeaderLine)]
    return ImportBatch(
        agents=tuple(r for r in converted if isinstance(r, AgentImport)),
        facts=tuple(r for r in converted if isinstance(r, FactImport)),
        reflections=tuple(r for r in converted if isinstance(r, ReflectionImport)),
        consolidated=tuple(r for r in converted if isinstance(r, ConsolidatedImport)),
        messages=tuple(r for r in converted if isinstance(r, MessageImport)),
        erasures=tuple(r for r in converted if isinstance(r, ErasureImport)),
    )
