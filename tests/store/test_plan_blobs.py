"""The consolidation compare-and-set and the management planners on their own (no database)."""

from __future__ import annotations

import pytest

from memory.errors import ConflictError, EmbeddingMismatchError, InvalidInputError, NotFoundError
from memory.ids import content_hash
from memory.models import Fact, Reflection
from memory.store.rules import (
    ConsolidationSnapshot,
    FactSnapshot,
    Plan,
    consolidation_blob,
    plan_consolidation,
    plan_delete_reflection,
    plan_edit_fact,
    plan_edit_reflection,
    plan_invalidate_fact,
)
from memory.store.rules.writes import (
    AbsorbReflections,
    BumpScopeVersions,
    DeleteReflection,
    PutConsolidated,
    PutFact,
    SetReflectionContent,
)
from tests.store.builders import MODEL, USER_KEY, at, reflection, unit


def test_consolidation_writes_the_next_version_and_absorbs() -> None:
    new = consolidation_blob(
        USER_KEY, expected_version=2, content="all", word_limit=50, at=at(9), edited_by="manual"
    )
    plan = plan_consolidation(new, ("r1", "r2"), ConsolidationSnapshot(version=2, buffered=2))
    assert plan.result.version == 3
    assert plan.writes == (
        PutConsolidated(new),
        AbsorbReflections(USER_KEY, ("r1", "r2"), 3),
        BumpScopeVersions((USER_KEY.key,)),
    )


@pytest.mark.parametrize(("version", "buffered"), [(1, 2), (3, 2), (2, 1)])
def test_consolidation_compare_and_set_conflicts(version: int, buffered: int) -> None:
    new = consolidation_blob(
        USER_KEY, expected_version=2, content="all", word_limit=50, at=at(9), edited_by="manual"
    )
    with pytest.raises(ConflictError):
        plan_consolidation(new, ("r1", "r2"), ConsolidationSnapshot(version, buffered))


def test_consolidation_blob_knows_its_editors() -> None:
    with pytest.raises(ValueError):
        consolidation_blob(
            USER_KEY, expected_version=0, content="x", word_limit=5, at=at(0), edited_by="robot"
        )


def fact(content: str = "Works at Acme", **kw: object) -> Fact:
    fields: dict[str, object] = {
        "fact_id": "f1", "agent_id": "a1", "user_id": "u1", "scope": "user", "content": content,
        "hash": content_hash(content), "embedding_model": MODEL, "formed_at": at(0),
        "updated_at": at(0), **kw,
    }  # fmt: skip
    return Fact.model_validate(fields)


def edit(content: str, snapshot: FactSnapshot, model: str = MODEL) -> Plan[Fact]:
    return plan_edit_fact(
        "f1", content=content, embedding=unit(0, 1), embedding_model=model, at=at(5),
        reason="typo", snapshot=snapshot,
    )  # fmt: skip


def test_edit_fact_rewrites_with_history_and_bumps_its_scope() -> None:
    plan = plan_edit_fact(
        "f1", content="Works at Globex", embedding=unit(0, 1), embedding_model=MODEL, at=at(5),
        reason="typo", snapshot=FactSnapshot(fact(), [], (MODEL, 4)),
    )  # fmt: skip
    edited = plan.result
    assert (edited.content, edited.version, edited.previous_content) == (
        "Works at Globex",
        2,
        "Works at Acme",
    )
    assert edited.history[-1].reason == "typo"
    assert plan.writes == (PutFact(edited, unit(0, 1)), BumpScopeVersions((USER_KEY.key,)))


def test_edit_fact_refusals() -> None:
    with pytest.raises(InvalidInputError):
        edit("  ", FactSnapshot(fact(), [], (MODEL, 4)))
    with pytest.raises(NotFoundError):
        edit("x", FactSnapshot(None, [], (MODEL, 4)))
    with pytest.raises(ConflictError):
        edit("x", FactSnapshot(fact(invalidated_at=at(1)), [], (MODEL, 4)))
    with pytest.raises(EmbeddingMismatchError):
        edit("x", FactSnapshot(fact(), [], (MODEL, 3)))
    twin = fact("Likes tea", fact_id="f2")
    with pytest.raises(ConflictError, match="f2"):
        edit("likes TEA", FactSnapshot(fact(), [twin], (MODEL, 4)))
    # An invalidated twin, or the fact itself, is no duplicate.
    gone = fact("Likes tea", fact_id="f2", invalidated_at=at(1))
    assert edit("likes tea", FactSnapshot(fact(), [gone], (MODEL, 4))).writes


def test_invalidate_fact_is_idempotent() -> None:
    plan = plan_invalidate_fact(
        "f1", at=at(7), reason="wrong", snapshot=FactSnapshot(fact(), [], None)
    )
    deleted = plan.result
    assert (deleted.invalidated_at, deleted.invalidated_by, deleted.version) == (at(7), None, 1)
    assert deleted.history[-1].reason == "wrong"
    assert plan.writes == (PutFact(deleted, None), BumpScopeVersions((USER_KEY.key,)))
    again = plan_invalidate_fact(
        "f1", at=at(8), reason="x", snapshot=FactSnapshot(deleted, [], None)
    )
    assert (again.writes, again.result) == ((), deleted)
    with pytest.raises(NotFoundError):
        plan_invalidate_fact("f1", at=at(8), reason="x", snapshot=FactSnapshot(None, [], None))


def test_reflection_edits_only_while_buffered() -> None:
    r = reflection(USER_KEY, 1)
    plan = plan_edit_reflection(r.reflection_id, "better", r)
    assert plan.result == r.model_copy(update={"content": "better"})
    assert plan.writes == (
        SetReflectionContent(r.reflection_id, "better"),
        BumpScopeVersions((USER_KEY.key,)),
    )
    assert plan_delete_reflection(r.reflection_id, r).writes[0] == DeleteReflection(r.reflection_id)
    absorbed: Reflection = r.model_copy(update={"absorbed_into_version": 1})
    with pytest.raises(ConflictError, match="absorbed"):
        plan_edit_reflection(r.reflection_id, "x", absorbed)
    with pytest.raises(ConflictError, match="absorbed"):
        plan_delete_reflection(r.reflection_id, absorbed)
    with pytest.raises(NotFoundError):
        plan_delete_reflection("nope", None)
    with pytest.raises(InvalidInputError):
        plan_edit_reflection(r.reflection_id, " ", r)
