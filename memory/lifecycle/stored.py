"""What the store writes of an import record: the stored fact, reflection and consolidated
memory each record becomes (memory.lifecycle.writer)."""

from __future__ import annotations

from memory.lifecycle.records import ConsolidatedImport, FactImport, ReflectionImport
from memory.models import ConsolidatedMemory, Fact, Reflection
from memory.said import split

NO_SESSION = "imported"  # Reflection.source_session_id for sources that name no session


def fact_of(imp: FactImport, embedding_model: str) -> Fact:
    """The stored fact an import record becomes, embedded with ``embedding_model``: its said_at
    the UTC instant, as every store keeps it, and the offset it was written with kept when the
    record names none (memory.said)."""
    said_at, carried = split(imp.said_at)
    offset = imp.said_utc_offset_minutes if imp.said_utc_offset_minutes is not None else carried
    return Fact(
        fact_id=imp.fact_id,
        agent_id=imp.agent_id,
        user_id=imp.user_id,
        scope=imp.scope,
        content=imp.content,
        hash=imp.hash,
        embedding_model=embedding_model,
        source_session_id=imp.source_session_id,
        source_message_ids=imp.source_message_ids,
        formation_id=imp.formation_id,
        said_at=said_at,
        said_utc_offset_minutes=offset or None,
        formed_at=imp.formed_at,
        updated_at=imp.updated_at,
        version=imp.version,
        previous_content=imp.previous_content,
        history=imp.history,
        invalidated_at=imp.invalidated_at,
        invalidated_by=imp.invalidated_by,
        access_count=imp.access_count,
        last_accessed_at=imp.last_accessed_at,
    )


def reflection_of(imp: ReflectionImport) -> Reflection:
    return Reflection(
        reflection_id=imp.reflection_id,
        scope_key=imp.scope_key,
        content=imp.content,
        source_session_id=imp.source_session_id or NO_SESSION,
        source_message_ids=imp.source_message_ids,
        formation_id=imp.formation_id,
        said_at=imp.said_at,
        formed_at=imp.formed_at,
        absorbed_into_version=imp.absorbed_into_version,
    )


def consolidated_of(imp: ConsolidatedImport) -> ConsolidatedMemory:
    return ConsolidatedMemory(
        scope_key=imp.scope_key,
        content=imp.content,
        version=imp.version,
        word_limit=imp.word_limit,
        updated_at=imp.updated_at,
        edited_by=imp.edited_by,
        said_from=imp.said_from,
    )
