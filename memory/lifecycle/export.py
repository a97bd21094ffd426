"""``mnemos export``'s format: JSON Lines, one typed record a line, and its reader.

    {"type": "header", "format": "mnemos-export", "version": 1, ...}
    {"type": "agent", ...AgentConfig}
    {"type": "fact", ...Fact, "embedding": [...] | null}     # with history and previous content
    {"type": "reflection", ...Reflection}
    {"type": "consolidated", ...ConsolidatedMemory}
    {"type": "message", ...StoredMessage, "session_created_at": ...}  # only with --messages
    {"type": "end", "counts": {"fact": n, ...}}

Records carry the store's own ids, so importing an export into an empty store recreates the same
facts, reflections and blobs (and importing it twice writes nothing new). The ``end`` line's
counts let the reader tell a complete file from a truncated one.

A message line's ``session_created_at`` is when its session was created in the exporting store:
an import creating the session gives it that time, so that the ids of the formations that read
it (memory.ids.formation_id: they name the session's incarnation by it) still name this session
and the memory page finds a fact's messages. Files written before it have none: the session is
then created at its first message's time, as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Annotated, Final, Literal, TextIO

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from memory.lifecycle.records import (
    AgentImport,
    ConsolidatedImport,
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

FORMAT: Final = "mnemos-export"
VERSION: Final = 1


class HeaderLine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["header"] = "header"
    format: Literal["mnemos-export"] = FORMAT
    version: Literal[1] = VERSION
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


class EndLine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["end"] = "end"
    counts: dict[str, int]


Record = AgentLine | FactLine | ReflectionLine | ConsolidatedLine | MessageLine
Line = Annotated[HeaderLine | Record | EndLine, Field(discriminator="type")]
_LINE: TypeAdapter[Line] = TypeAdapter(Line)


class ExportFormatError(ValueError):
    def __init__(self, line_no: int, message: str) -> None:
        super().__init__(f"export line {line_no}: {message}")
        self.line_no = line_no


def line(record: HeaderLine | Record | EndLine) -> str:
    return record.model_dump_json() + "\n"


def write_export(out: TextIO, header: HeaderLine, records: Iterable[Record]) -> dict[str, int]:
    """Header, records, then the end line with the counts; returns the counts."""
    out.write(line(header))
    counts: Counter[str] = Counter()
    for record in records:
        out.write(line(record))
        counts[record.type] += 1
    out.write(line(EndLine(counts=dict(counts))))
    return dict(counts)


def read_export(lines: Iterable[str]) -> Iterator[HeaderLine | Record]:
    """Validated records in file order, the header first; ExportFormatError on the first bad
    line, or at the end of a file whose ``end`` line is missing or disagrees (truncated)."""
    counts: Counter[str] = Counter()
    ended: EndLine | None = None
    n = 0
    for n, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        if ended is not None:
            raise ExportFormatError(n, "data after the end line")
        try:
            parsed = _LINE.validate_json(text)
        except ValidationError as e:
            if n == 1:
                raise ExportFormatError(n, f"not a {FORMAT} v{VERSION} header: {e}") from e
            raise ExportFormatError(n, str(e)) from e
        if (n == 1) != isinstance(parsed, HeaderLine):
            raise ExportFormatError(n, "the header must be the first line, and only it")
        if isinstance(parsed, EndLine):
            ended = parsed
            continue
        if not isinstance(parsed, HeaderLine):
            counts[parsed.type] += 1
        yield parsed
    if ended is None:
        raise ExportFormatError(n, "no end line: the export is truncated")
    if dict(counts) != {k: v for k, v in ended.counts.items() if v}:
        raise ExportFormatError(n, f"records {dict(counts)} != end line counts {ended.counts}")


def to_import(records: Iterable[HeaderLine | Record]) -> ImportBatch:
    """An export's records as import records, ids unchanged."""
    agents: list[AgentImport] = []
    facts: list[FactImport] = []
    reflections: list[ReflectionImport] = []
    blobs: list[ConsolidatedImport] = []
    messages: list[MessageImport] = []

    def ref(collection: str, source_id: str) -> SourceRef:
        return SourceRef(system="mnemos", collection=collection, source_id=source_id)

    for r in records:
        match r:
            case AgentLine():
                config = AgentConfig.model_validate(r.model_dump(exclude={"type"}))
                agents.append(AgentImport(agent_id=r.agent_id, config=config))
            case FactLine():
                fields = r.model_dump(exclude={"type", "hash", "embedding_model"})
                model = r.embedding_model if r.embedding is not None else None
                facts.append(
                    FactImport(**fields, embedding_model=model, source=ref("facts", r.fact_id))
                )
            case ReflectionLine():
                reflections.append(
                    ReflectionImport(
                        **r.model_dump(exclude={"type"}),
                        source=ref("reflections", r.reflection_id),
                    )
                )
            case ConsolidatedLine():
                blobs.append(
                    ConsolidatedImport(
                        **r.model_dump(exclude={"type"}),
                        sources=(ref("consolidated", r.scope_key.key),),
                    )
                )
            case MessageLine():
                dumped = r.model_dump(exclude={"type", "session_created_at"})
                message = StoredMessage.model_validate(dumped)
                key = f"{r.session_id}:{r.message_id}"
                messages.append(
                    MessageImport(
                        message=message,
                        session_created_at=r.session_created_at,
                        source=ref("messages", key),
                    )
                )
            case HeaderLine():
                pass
    return ImportBatch(
        agents=tuple(agents),
        facts=tuple(facts),
        reflections=tuple(reflections),
        consolidated=tuple(blobs),
        messages=tuple(messages),
    )
