"""`mnemos import file`: a `mnemos export` file imported a batch at a time, never held whole.

Two passes over the file. The first (``scan``) reads every line as read_export does (each line
parsed and checked, the end line and its counts last) and holds each record to the input rules
(checks.check_batch), keeping only where each record's line starts and who the messages show
(``FileIndex``): a truncated or bad file is refused before anything is written, as when the
file was read whole. The second (``batches``) reads the records again by those offsets, a batch
of at most ``BATCH`` at a time, by kind in the order the writer takes them (agents, messages,
blobs, facts, reflections, erasure tombstones: messages before session memory, the tombstones
last, writer.write_batch), a session's
messages always in one batch (the store judges a session against all of the file's messages of
it). Memory is the batch, the offsets and the people of the sessions, not the file.

The batches written one after the other write what one batch of the whole file writes: what an
earlier batch wrote is there for a later one (a record twice in the file is "existing", a
fact's text twice a "duplicate", as within one batch), each batch is given the file's session
people and the blobs written before it (write_batch's ``people`` and ``blobs_written``), and a
dry run holds the ids a write would have stored (dry_run.Judge).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, Final, Literal

from pydantic import TypeAdapter, ValidationError

from memory.lifecycle.checks import check_batch, record_problems
from memory.lifecycle.export import (
    ExportFormatError,
    HeaderLine,
    ImportRecord,
    Line,
    Record,
    import_record,
    read_export,
)
from memory.lifecycle.people import People
from memory.lifecycle.records import (
    AgentImport,
    ConsolidatedImport,
    ErasureImport,
    FactImport,
    ImportBatch,
    MessageImport,
    ReflectionImport,
)
from memory.lifecycle.writer import CHUNK
from memory.store.counts import Erasure, SessionPeople
from memory.store.rules.import_erasures import Known, known_of

# Records a batch holds (a session's messages excepted: whole, however many). A multiple of the
# writer's chunk, so that a kind's chunks are cut where one batch of the file would cut them.
BATCH: Final = 2 * CHUNK

Kind = Literal["agents", "facts", "reflections", "consolidated", "messages", "erasures"]
# The order the writer takes the kinds in (write_batch), and the order a dry run judges them in
# (dry_run.Judge: its drops are listed in it). The tombstones last: the file's records of a user
# who came back after a forget are imported before it binds (rules.import_erasures).
WRITE_ORDER: tuple[Kind, ...] = (
    "agents", "messages", "consolidated", "facts", "reflections", "erasures",
)  # fmt: skip
PLAN_ORDER: tuple[Kind, ...] = (
    "agents", "facts", "reflections", "consolidated", "messages", "erasures",
)  # fmt: skip

_BOM: Final = b"\xef\xbb\xbf"
_LINE: TypeAdapter[Line] = TypeAdapter(Line)


def _offsets() -> array[int]:
    return array("q")


@dataclass
class FileIndex:
    """What the first pass keeps of a file: where each record's line starts, by kind (a
    session's messages together, sessions in the order first seen), and who the file's messages
    show in the sessions of its session memory (writer.session_people of the whole file)."""

    agents: array[int] = field(default_factory=_offsets)
    facts: array[int] = field(default_factory=_offsets)
    reflections: array[int] = field(default_factory=_offsets)
    consolidated: array[int] = field(default_factory=_offsets)
    erasures: array[int] = field(default_factory=_offsets)
    sessions: dict[str, array[int]] = field(default_factory=dict)
    people: tuple[SessionPeople, ...] = ()
    # The file's tombstones (rules.import_erasures.known_of): every batch's records are judged
    # against the forgets the file does not know of, though its erasure lines come last.
    known: Known = ()
    stamp: tuple[int, int] = (0, 0)  # the file's size and mtime when scanned


def _stamp(f: BinaryIO) -> tuple[int, int]:
    st = os.fstat(f.fileno())
    return st.st_size, st.st_mtime_ns


@contextmanager
def open_export(path: Path) -> Iterator[BinaryIO]:
    """The file, to be read twice: a pipe (``/dev/stdin``) is copied to a temporary file first
    (readable by its owner only), never into memory. OSError: it cannot be read."""
    with path.open("rb") as f:
        if f.seekable():
            yield f
            return
        with tempfile.TemporaryFile() as copy:
            shutil.copyfileobj(f, copy)
            copy.seek(0)
            yield copy


def _lines(f: BinaryIO, starts: list[int]) -> Iterator[str]:
    """The file's lines as text (a byte-order mark, as some editors save, skipped), noting in
    ``starts[0]`` where the line just given starts. UnicodeDecodeError: not UTF-8."""
    f.seek(0)
    offset = 0
    for raw in f:
        starts[0] = offset
        text = raw.removeprefix(_BOM) if offset == 0 else raw
        offset += len(raw)
        yield text.decode("utf-8")


class _Scan:
    """One record after the other: its line's offset kept by kind, its problems and people."""

    def __init__(self, now: datetime) -> None:
        self.index = FileIndex()
        self.people = People()
        self.now = now
        self.bad: dict[Kind, list[ImportRecord]] = {}
        self.erasures: list[Erasure] = []

    def add(self, record: ImportRecord, offset: int) -> None:
        kind = _kind(record)
        if isinstance(record, MessageImport):
            self.index.sessions.setdefault(record.message.session_id, _offsets()).append(offset)
            self.people.message(record.message)
        else:
            getattr(self.index, kind).append(offset)
            if isinstance(record, ConsolidatedImport | ReflectionImport):
                self.people.memory(record.scope_key, blob=kind == "consolidated")
            if isinstance(record, ErasureImport):
                self.erasures.append(record.stored())
        if record_problems(record, now=self.now):
            self.bad.setdefault(kind, []).append(record)

    def check(self) -> None:
        """check_batch's refusal, naming the bad records as it does for a whole file (only
        those are kept: the file's good records are not needed to say it)."""
        if self.bad:
            check_batch(ImportBatch.model_validate(self.bad), now=self.now)


def _kind(record: ImportRecord) -> Kind:
    match record:
        case AgentImport():
            return "agents"
        case FactImport():
            return "facts"
        case ReflectionImport():
            return "reflections"
        case ConsolidatedImport():
            return "consolidated"
        case MessageImport():
            return "messages"
        case ErasureImport():
            return "erasures"


def scan(f: BinaryIO, *, now: datetime) -> FileIndex:
    """The first pass: every line read and checked as read_export reads it (ExportFormatError,
    UnicodeDecodeError: not an export), every record held to the input rules (InvalidInputError
    naming the bad ones). Nothing of the file is kept but its FileIndex."""
    starts = [0]
    scanned = _Scan(now)
    for parsed in read_export(_lines(f, starts)):
        if not isinstance(parsed, HeaderLine):
            # read_export yields a record as soon as its line is read: starts[0] is that line's.
            scanned.add(import_record(parsed), starts[0])
    scanned.check()
    scanned.index.people = scanned.people.sessions()
    scanned.index.known = known_of(scanned.erasures)
    scanned.index.stamp = _stamp(f)
    return scanned.index


def _changed() -> ExportFormatError:
    return ExportFormatError(None, "the file changed while it was imported: import it again")


def _record(f: BinaryIO, offset: int) -> ImportRecord:
    """The record whose line starts at ``offset`` (never 0: the header's)."""
    f.seek(offset)
    try:
        parsed = _LINE.validate_json(f.readline())
        if isinstance(parsed, Record):
            return import_record(parsed)
    except ValidationError:
        pass
    raise _changed()


def _chunks(offsets: Iterable[Sequence[int]], size: int) -> Iterator[list[int]]:
    """Offsets in lists of about ``size``, each group of ``offsets`` whole (a session's)."""
    chunk: list[int] = []
    for group in offsets:
        if chunk and len(chunk) + len(group) > size:
            yield chunk
            chunk = []
        chunk.extend(group)
    if chunk:
        yield chunk


def _groups(index: FileIndex, kind: Kind) -> Iterable[Sequence[int]]:
    """A kind's offsets, grouped by what must stay in one batch: a session's messages; else one
    record a group (a batch is cut anywhere)."""
    if kind == "messages":
        return index.sessions.values()
    return ([o] for o in getattr(index, kind))


def _batch(kind: Kind, records: list[ImportRecord]) -> ImportBatch:
    return ImportBatch.model_validate({kind: records})


def batches(
    f: BinaryIO,
    index: FileIndex,
    *,
    order: tuple[Kind, ...] = WRITE_ORDER,
    size: int = BATCH,
) -> Iterator[ImportBatch]:
    """The second pass: the file's records again, by kind in ``order``, in batches of about
    ``size`` (a session's messages whole). The agents' batch comes first even when empty: a
    file of no records imports as one empty batch, with the counts it gives."""
    if _stamp(f) != index.stamp:
        raise _changed()
    for kind in order:
        given = False
        for chunk in _chunks(_groups(index, kind), size):
            given = True
            yield _batch(kind, [_record(f, offset) for offset in chunk])
        if kind == "agents" and not given:
            yield ImportBatch()
