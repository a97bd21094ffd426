"""Reflections and consolidated blobs, planned: the consolidation compare-and-set, setting aside
a reflection no consolidation could take, and a person's edit or delete of a buffered (or set
aside) reflection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memory.errors import ConflictError, InvalidInputError, NotFoundError
from memory.ids import text_hash
from memory.models import SET_ASIDE, ConsolidatedMemory, Reflection, ScopeKey
from memory.store.rules.writes import (
    AbsorbReflections,
    BumpScopeVersions,
    DeleteReflection,
    Plan,
    PutConsolidated,
    Request,
    SetReflectionContent,
    Write,
)


@dataclass(frozen=True)
class ConsolidationSnapshot:
    version: int  # the stored blob's, 0 for none
    buffered: int  # how many of the request's ids are buffered reflections of its key
    # The stored content of each of the request's ids that exists, when it asked for them.
    contents: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ConsolidationRequest(Request[ConsolidationSnapshot]):
    key: str
    reflection_ids: tuple[str, ...]  # distinct
    # Read the reflections' contents too: the commit checks them against its draft's.
    contents: bool = False


@dataclass(frozen=True)
class ReflectionRequest(Request[Reflection | None]):
    reflection_id: str


def consolidation_blob(
    key: ScopeKey,
    *,
    expected_version: int,
    content: str,
    word_limit: int,
    at: datetime,
    edited_by: str,
    said_from: datetime | None = None,
) -> ConsolidatedMemory:
    """The blob a consolidation writes, validated before any transaction (edited_by must be one
    the model knows)."""
    return ConsolidatedMemory.model_validate(
        {
            "scope_key": key,
            "content": content,
            "version": expected_version + 1,
            "word_limit": word_limit,
            "updated_at": at,
            "edited_by": edited_by,
            "said_from": said_from,
        }
    )


def plan_consolidation(
    blob: ConsolidatedMemory,
    absorbed_ids: Sequence[str],
    snapshot: ConsolidationSnapshot,
    absorbed_hashes: Mapping[str, str] | None = None,
) -> Plan[ConsolidatedMemory]:
    """Write ``blob`` (version n) only if the stored blob is at n - 1 (0: none yet) and each of
    ``absorbed_ids`` (distinct) is a buffered reflection of its key, marking them absorbed into it;
    ConflictError otherwise. ``absorbed_hashes`` (id: ``text_hash`` of the content the blob was
    drafted from): ConflictError too when one of those reflections was edited since. Bumps the
    scope key's version."""
    key = blob.scope_key
    if snapshot.version != blob.version - 1:
        raise ConflictError(f"{key.key} is at version {snapshot.version}, not {blob.version - 1}")
    if snapshot.buffered != len(absorbed_ids):
        raise ConflictError(
            f"{len(absorbed_ids) - snapshot.buffered} reflection(s) of {key.key} already absorbed or unknown"
        )
    # Absorbed with the text the blob holds, or not at all: a person's correction made after the
    # draft would otherwise be marked absorbed and lost.
    edited = [
        rid
        for rid, drafted in (absorbed_hashes or {}).items()
        if rid in absorbed_ids and text_hash(snapshot.contents.get(rid, "")) != drafted
    ]
    if edited:
        raise ConflictError(
            f"reflection(s) {', '.join(edited)} of {key.key} edited since the draft"
        )
    writes = (
        PutConsolidated(blob),
        AbsorbReflections(key, tuple(absorbed_ids), blob.version),
        BumpScopeVersions((key.key,)),
    )
    return Plan(writes, blob)


def plan_set_aside(
    key: ScopeKey, reflection_id: str, drafted_hash: str, current: Reflection | None
) -> Plan[bool]:
    """Take a buffered reflection of ``key`` out of the buffer (absorbed into SET_ASIDE) when its
    text is still the one the failed drafts read (``drafted_hash``: its ``text_hash``). False, and
    nothing written, when it is gone, no longer buffered, or was corrected since: a correction
    is a new attempt, for the next consolidation."""
    if (
        current is None
        or current.scope_key.key != key.key
        or current.absorbed_into_version is not None
        or text_hash(current.content) != drafted_hash
    ):
        return Plan((), False)
    writes = (
        AbsorbReflections(key, (reflection_id,), SET_ASIDE),
        BumpScopeVersions((key.key,)),
    )
    return Plan(writes, True)


def _editable(reflection_id: str, current: Reflection | None, action: str) -> Reflection:
    """A buffered or set-aside reflection: what a person may still correct or remove."""
    if current is None:
        raise NotFoundError(f"no reflection {reflection_id}")
    if current.absorbed_into_version not in (None, SET_ASIDE):
        raise ConflictError(
            f"cannot {action} reflection {reflection_id}: it is already absorbed into version "
            f"{current.absorbed_into_version} of {current.scope_key.key} (edit that instead)"
        )
    return current


def plan_edit_reflection(
    reflection_id: str,
    content: str,
    current: Reflection | None,
    expected_content: str | None = None,
) -> Plan[Reflection]:
    """Correct a buffered reflection, or a set-aside one, which puts it back in the buffer (the
    next consolidation tries its new text). ConflictError once absorbed (edit the blob instead),
    or when its text is no longer ``expected_content``, the one the person edited (None:
    whichever is stored)."""
    if not content.strip():
        raise InvalidInputError("a reflection cannot be empty")
    reflection = _editable(reflection_id, current, "edit")
    # A reflection has no version: its text is what the person saw. Another tab's correction
    # would otherwise be lost unseen, as a stale edit of a blob or a fact would. Compared word
    # by word: a form sends a line break back as CR LF, and an edit stores one line anyway.
    if expected_content is not None and reflection.content.split() != expected_content.split():
        raise ConflictError(
            f"reflection {reflection_id} was changed since it was read: reload and edit again"
        )
    key = reflection.scope_key
    writes: tuple[Write, ...] = (SetReflectionContent(reflection_id, content),)
    if reflection.absorbed_into_version == SET_ASIDE:
        writes += (AbsorbReflections(key, (reflection_id,), None),)
    writes += (BumpScopeVersions((key.key,)),)
    return Plan(
        writes,
        reflection.model_copy(update={"content": content, "absorbed_into_version": None}),
    )


def plan_delete_reflection(reflection_id: str, current: Reflection | None) -> Plan[None]:
    """Remove a buffered or set-aside reflection. ConflictError once absorbed; NotFoundError when
    unknown."""
    reflection = _editable(reflection_id, current, "delete")
    writes = (DeleteReflection(reflection_id), BumpScopeVersions((reflection.scope_key.key,)))
    return Plan(writes, None)
