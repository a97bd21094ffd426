"""A new version of a fact: its old content and provenance kept in its history (formations and
manual edits alike)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory.ids import content_hash
from memory.models import MAX_SOURCES, Fact, FactRevision


@dataclass(frozen=True)
class Provenance:
    """Where a new version of a fact comes from (a formation; None for a manual edit)."""

    source_message_ids: tuple[str, ...] = ()
    formation_id: str | None = None
    said_at: datetime | None = None


def rewritten(
    fact: Fact,
    *,
    content: str,
    model: str,
    at: datetime,
    reason: str,
    provenance: Provenance | None = None,
) -> Fact:
    """A new version of the fact with this content, valid, its old content and provenance kept
    in history. A formed version cites its own messages first, then the earlier version's (it
    is still the same fact), at most MAX_SOURCES; a manual edit keeps the sources it had."""
    revision = FactRevision(
        version=fact.version,
        content=fact.content,
        changed_at=at,
        reason=reason,
        source_message_ids=fact.source_message_ids,
        formation_id=fact.formation_id,
        said_at=fact.said_at,
    )
    sourced: dict[str, object] = {}
    if provenance is not None:
        ids = (*provenance.source_message_ids, *fact.source_message_ids)
        sourced = {
            "source_message_ids": tuple(dict.fromkeys(ids))[:MAX_SOURCES],
            "formation_id": provenance.formation_id,
            "said_at": provenance.said_at or fact.said_at,
        }
    return fact.model_copy(
        update={
            **sourced,
            "content": content,
            "hash": content_hash(content),
            "embedding_model": model,
            "updated_at": at,
            "version": fact.version + 1,
            "previous_content": fact.content,
            "history": (*fact.history, revision),
            "invalidated_at": None,
            "invalidated_by": None,
        }
    )
