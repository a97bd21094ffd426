"""Import records held to what recording accepts, before the first write: a bad file is named,
record by record, and changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from pydantic import TypeAdapter, ValidationError

from memory.errors import InvalidInputError
from memory.input_rules import misdated, text_problem
from memory.lifecycle.records import (
    AgentImport,
    ConsolidatedImport,
    FactImport,
    ImportBatch,
    MessageImport,
    Record,
    ReflectionImport,
    SourceRef,
)
from memory.models import MessageIn, fits_int64

# What an import writes is held to what recording accepts (memory.models.MessageIn,
# memory.input_rules): a message as it is recorded; the text of a fact, a reflection or a blob as a
# message's content (not blank, no control character but tab, newline and carriage return, at most
# 100,000 characters); every other string storable (no NUL: PostgreSQL refuses it; no unpaired
# surrogate); every timestamp from 1970 to a day after the import (misdated); every integer one a
# store holds (memory.models.StoredInt: the import records' own fields are unbounded).
_CONTENT: TypeAdapter[str] = TypeAdapter(MessageIn.model_fields["content"].rebuild_annotation())
_RECORDED = set(MessageIn.model_fields)
_SHOWN = 5  # problems named in the error; the rest are counted


def _why(error: ValidationError) -> Iterator[tuple[str, str]]:
    for e in error.errors():
        yield ".".join(map(str, e["loc"])), e["msg"].removeprefix("Value error, ")


def _leaves(value: object, path: str = "") -> Iterator[tuple[str, object]]:
    """Every scalar of a dumped record, with its path (``history.0.content``)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}.{i}")
    else:
        yield path, value


def _texts(record: Record) -> dict[str, str]:
    """The texts of a record that are shown to people and the model, by path."""
    match record:
        case FactImport():
            texts = {"content": record.content}
            if record.previous_content is not None:
                texts["previous_content"] = record.previous_content
            texts |= {f"history.{i}.content": r.content for i, r in enumerate(record.history)}
            return texts
        case ReflectionImport() | ConsolidatedImport():
            return {"content": record.content}
    return {}


# The highest seq an import may give a message: the largest integer a JSON reader of every
# language reads exactly (JavaScript's 2^53 - 1), and far below the 64-bit bound the stores hold,
# so that a session imported at it still records (a seq of 2^63 - 1 would leave the next
# message no seq: the session could never be written again).
MAX_IMPORTED_SEQ = 2**53 - 1


def record_problems(record: Record, *, now: datetime) -> dict[str, str]:
    """What in ``record`` the input rules refuse, by field path (empty: nothing)."""
    problems: dict[str, str] = {}
    for path, text in _texts(record).items():
        try:
            _CONTENT.validate_python(text)
        except ValidationError as e:
            problems[path] = next(why for _, why in _why(e))
    if isinstance(record, MessageImport):
        recorded = record.message.model_dump(include=_RECORDED)
        try:
            MessageIn.model_validate(recorded)
        except ValidationError as e:
            problems |= {f"message.{loc}": why for loc, why in _why(e)}
        if record.message.seq > MAX_IMPORTED_SEQ:
            problems["message.seq"] = f"is over {MAX_IMPORTED_SEQ:,}"
    # A fact's vector holds only numbers: not walked (it may be long), its size is the writer's.
    for path, value in _leaves(record.model_dump(exclude={"embedding"})):
        if path in problems:
            continue
        if isinstance(value, str) and (problem := text_problem(value)) is not None:
            problems[path] = f"text {problem}"
        elif isinstance(value, datetime) and (why := misdated(value, now)) is not None:
            # misdated words it for a message's created_at; the path names the field here.
            problems[path] = why.removeprefix("created_at ")
        elif isinstance(value, int):
            try:
                fits_int64(value)
            except ValueError as e:
                problems[path] = str(e)
    return problems


def _label(record: Record) -> str:
    match record:
        case AgentImport():
            return f"agent {record.agent_id}"
        case FactImport():
            return f"fact {record.fact_id}"
        case ReflectionImport():
            return f"reflection {record.reflection_id}"
        case ConsolidatedImport():
            return f"consolidated memory {record.scope_key.key}"
        case MessageImport():
            return f"message {record.message.message_id} of session {record.message.session_id}"
    return type(record).__name__


def _source(record: Record) -> str:
    source = getattr(record, "source", None)
    if isinstance(record, ConsolidatedImport) and record.sources:
        source = record.sources[0]
    if not isinstance(source, SourceRef):
        return ""
    return f" ({source.system} {source.collection} {source.source_id})"


def check_batch(batch: ImportBatch, *, now: datetime) -> None:
    """InvalidInputError, naming the records and what is wrong with them, when any record of the
    batch breaks the input rules: called before the first write, so that bad input changes
    nothing. ``now``: the import's time, which the timestamps may not be far ahead of."""
    records: list[Record] = [
        *batch.agents, *batch.facts, *batch.reflections, *batch.consolidated, *batch.messages,
    ]  # fmt: skip
    found = [
        f"{_label(r)}{_source(r)}: {path}: {why}"
        for r in records
        for path, why in record_problems(r, now=now).items()
    ]
    if found:
        more = f" (and {len(found) - _SHOWN} more)" if len(found) > _SHOWN else ""
        raise InvalidInputError(
            f"nothing imported: {len(found)} problem(s) in the input: "
            + "; ".join(found[:_SHOWN])
            + more
        )
