"""A person's edit or delete of a fact (operators, backend UIs), planned.

Both are stamped like a formation's writes (caches re-read the fact) and bump the fact's scope
key version (context caches drop what they hold).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.errors import ConflictError, EmbeddingMismatchError, InvalidInputError, NotFoundError
from memory.ids import content_hash
from memory.models import Fact, FactRevision
from memory.store.rules.derived import fact_scope_key
from memory.store.rules.fact_ops import same_fact
from memory.store.rules.versions import LEARNT_LATE, rewritten
from memory.store.rules.writes import BumpScopeVersions, Plan, PutFact, Request


@dataclass(frozen=True)
class FactSnapshot:
    fact: Fact | None
    same_content: Sequence[Fact]  # the fact's agent's facts with the request's hash
    embedding_meta: tuple[str, int] | None


@dataclass(frozen=True)
class FactRequest(Request[FactSnapshot]):
    fact_id: str
    content_hash: str | None = None  # None: same_content and embedding_meta are not needed


def plan_edit_fact(
    fact_id: str,
    *,
    content: str,
    embedding: Sequence[float],
    embedding_model: str,
    at: datetime,
    reason: str,
    snapshot: FactSnapshot,
    expected_version: int | None = None,
) -> Plan[Fact]:
    """A person's correction: version + 1, previous content kept in history, new vector, scope
    version bumped. NotFoundError for an unknown id, ConflictError for an invalidated fact, a
    content that duplicates another valid fact of the same agent/user/scope, or a fact no longer
    at ``expected_version`` (the version the person edited; None: whichever is stored).

    Read ``FactRequest(fact_id, content_hash(content))``'s snapshot."""
    fact, embedding_meta = snapshot.fact, snapshot.embedding_meta
    if not content.strip():
        raise InvalidInputError("a fact cannot be empty")
    if fact is None:
        raise NotFoundError(f"no fact {fact_id}")
    if fact.invalidated_at is not None:
        raise ConflictError(f"fact {fact_id} was deleted: it can no longer be edited")
    check_edited_version(fact, expected_version)
    if embedding_meta != (embedding_model, len(embedding)):
        raise EmbeddingMismatchError(
            f"edit has {embedding_model}/{len(embedding)}, stored facts have "
            f"{'nothing' if embedding_meta is None else f'{embedding_meta[0]}/{embedding_meta[1]}'}"
        )
    hash_ = content_hash(content)
    for other in snapshot.same_content:
        key = (fact.agent_id, fact.scope, fact.user_id, hash_)
        if other.fact_id != fact_id and other.invalidated_at is None and same_fact(other, *key):
            raise ConflictError(f"fact {fact_id} would duplicate fact {other.fact_id}")
    edited = rewritten(fact, content=content, model=embedding_model, at=at, reason=reason)
    writes = (PutFact(edited, embedding), BumpScopeVersions((fact_scope_key(fact),)))
    return Plan(writes, edited)


def check_edited_version(fact: Fact, expected_version: int | None) -> None:
    """A person's edit of version n replaces version n only: a newer one (another tab's edit, a
    formation's update) would be lost unseen, so the edit is refused, as a blob's is. Versions
    that only kept a statement learnt late (``versions.told_before``: the text unchanged) hide
    nothing from the person: the edit of the text they saw stands."""
    if expected_version is not None and not _unchanged_since(fact, expected_version):
        raise ConflictError(
            f"fact {fact.fact_id} is at version {fact.version}, not {expected_version}: "
            "reload and edit again"
        )


def _unchanged_since(fact: Fact, version: int) -> bool:
    """Whether the fact's text is version ``version``'s: the same version, or every one after it
    a statement learnt late (whose revision, of the version it followed, keeps the text)."""
    if version > fact.version:
        return False
    reasons = {r.version: r.reason for r in fact.history}  # the latest revision of each version
    return all(reasons.get(v) == LEARNT_LATE for v in range(version, fact.version))


def plan_invalidate_fact(
    fact_id: str, *, at: datetime, reason: str, snapshot: FactSnapshot
) -> Plan[Fact]:
    """A person's delete: the fact is kept, marked invalid (history entry), never shown again.
    Idempotent for an already invalid fact; NotFoundError for an unknown id."""
    fact = snapshot.fact
    if fact is None:
        raise NotFoundError(f"no fact {fact_id}")
    if fact.invalidated_at is not None:
        return Plan((), fact)  # deleted already: nothing more to record
    revision = FactRevision(
        version=fact.version, content=fact.content, changed_at=at, reason=reason
    )
    deleted = fact.model_copy(update={"invalidated_at": at, "history": (*fact.history, revision)})
    writes = (PutFact(deleted, None), BumpScopeVersions((fact_scope_key(fact),)))
    return Plan(writes, deleted)
