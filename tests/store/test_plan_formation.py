"""The formation planner on its own: a snapshot in, writes and a result out (no database)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from memory.errors import (
    ConflictError,
    EmbeddingMismatchError,
    InvalidInputError,
    StaleDecisionError,
)
from memory.formation_commit import (
    AddRecheck,
    FactAdd,
    FactInvalidate,
    FactKeep,
    FactUpdate,
    FormationCommit,
    FormationCommitResult,
)
from memory.ids import content_hash
from memory.models import Fact, SessionAgentState
from memory.store.rules import FormationSnapshot, formation_request, plan_formation
from memory.store.rules.manage import FactSnapshot, plan_invalidate_fact
from memory.store.rules.versions import LEARNT_LATE, rewritten
from memory.store.rules.writes import (
    BumpScopeVersions,
    InsertReflections,
    MoveCursor,
    PutFact,
    RecordFormation,
    SetEmbeddingMeta,
)
from tests.store.builders import AGENT_KEY, MODEL, USER_KEY, add, at, commit, reflection, unit

STATE = SessionAgentState(session_id="s1", agent_id="a1", cursor_seq=0, last_seq=3)


def stored(fact_id: str, content: str, *, invalidated: float | None = None, **kw: object) -> Fact:
    fields: dict[str, object] = {
        "fact_id": fact_id, "agent_id": "a1", "user_id": "u1", "scope": "user",
        "content": content, "hash": content_hash(content), "embedding_model": MODEL,
        "formed_at": at(0), "updated_at": at(0),
        "invalidated_at": None if invalidated is None else at(invalidated), **kw,
    }  # fmt: skip
    return Fact.model_validate(fields)


def snapshot(
    *facts: Fact,
    meta: tuple[str, int] | None = (MODEL, 4),
    state: SessionAgentState | None = STATE,
    done: FormationCommitResult | None = None,
    existing: frozenset[str] = frozenset(),
    buffered: dict[str, int] | None = None,
) -> FormationSnapshot:
    return FormationSnapshot(
        done=done, state=state, embedding_meta=meta, facts=list(facts),
        existing_reflections=existing, buffered=buffered or {}, pending_after=(2, 5.0),
        participants=frozenset({"u1", "u2"}),
    )  # fmt: skip


def puts(writes: Sequence[object]) -> list[tuple[str, str, str | None, bool]]:
    """(fact id, content, invalidated_by, new) of each PutFact, in order."""
    return [
        (w.fact.fact_id, w.fact.content, w.fact.invalidated_by, w.new)
        for w in writes
        if isinstance(w, PutFact)
    ]


def update(fact_id: str, content: str, expected: int = 1) -> FactUpdate:
    return FactUpdate(
        fact_id=fact_id, expected_version=expected, content=content, embedding=unit(0, 1),
        reason="changed",
    )  # fmt: skip


def invalidate(fact_id: str, replaced_by: str, expected: int = 1) -> FactInvalidate:
    return FactInvalidate(fact_id=fact_id, expected_version=expected, replaced_by=replaced_by)


def test_request_names_every_fact_hash_and_reflection_the_commit_touches() -> None:
    c = commit(
        ops=[add("f1", "Likes tea", unit(1)), update("f0", "Likes coffee"), invalidate("f9", "f1")],
        reflections=[reflection(USER_KEY, 1), reflection(AGENT_KEY, 2)],
    )
    req = formation_request(c)
    assert req.fact_ids == ("f1", "f0", "f9")
    assert req.hashes == (content_hash("Likes tea"), content_hash("Likes coffee"))
    assert req.scope_keys == tuple(sorted([USER_KEY.key, AGENT_KEY.key]))
    assert (req.new_cursor, req.agent_id) == (1, "a1")


def test_add_writes_a_new_fact_moves_the_cursor_and_records_the_result() -> None:
    c = commit(ops=[add("f1", "Likes tea", unit(1))], reflections=[reflection(USER_KEY, 1)])
    plan = plan_formation(c, snapshot(meta=None, buffered={USER_KEY.key: 2}))

    kinds = [type(w) for w in plan.writes]
    assert kinds == [
        SetEmbeddingMeta, PutFact, InsertReflections, BumpScopeVersions, MoveCursor,
        RecordFormation,
    ]  # fmt: skip
    assert plan.writes[0] == SetEmbeddingMeta(MODEL, 4)
    [put] = [w for w in plan.writes if isinstance(w, PutFact)]
    assert put.new and put.embedding == unit(1)
    assert (put.fact.fact_id, put.fact.hash, put.fact.formed_at) == (
        "f1",
        content_hash("Likes tea"),
        at(100),
    )
    assert (put.fact.source_session_id, put.fact.version) == ("s1", 1)
    assert plan.writes[3] == BumpScopeVersions((USER_KEY.key,))
    result = plan.result
    assert (result.facts_added, result.reflections_added, result.buffered) == (
        1,
        1,
        {USER_KEY.key: 3},
    )
    assert result.state is not None
    assert (result.state.cursor_seq, result.state.formations) == (1, 1)
    assert (result.state.pending_messages, result.state.pending_weighted_tokens) == (2, 5.0)
    assert plan.writes[-1] == RecordFormation(result, at(100))


def test_two_adds_of_one_content_in_a_commit_store_one_fact() -> None:
    c = commit(ops=[add("f1", "Likes tea", unit(1)), add("f2", "likes TEA.", unit(1))])
    plan = plan_formation(c, snapshot())
    assert puts(plan.writes) == [("f1", "Likes tea", None, True)]
    assert (plan.result.facts_added, plan.result.facts_duplicate) == (1, 1)


def test_add_of_a_stored_valid_content_is_a_duplicate_and_writes_no_fact() -> None:
    plan = plan_formation(
        commit(ops=[add("f2", "likes tea", unit(1))]), snapshot(stored("f1", "Likes tea"))
    )
    assert puts(plan.writes) == []
    assert (plan.result.facts_added, plan.result.facts_duplicate) == (0, 1)
    # Only the cursor moves: no scope key was touched.
    assert not any(isinstance(w, BumpScopeVersions) for w in plan.writes)


def test_add_revives_the_latest_invalidated_fact_with_that_content() -> None:
    old = stored("f0", "Lives in Paris", invalidated=10, invalidated_by="fx")
    latest = stored("f1", "Lives in Paris", invalidated=20, invalidated_by="fy")
    plan = plan_formation(commit(ops=[add("f3", "Lives in Paris", unit(1))]), snapshot(old, latest))

    [put] = [w for w in plan.writes if isinstance(w, PutFact)]
    assert (put.fact.fact_id, put.new, put.fact.version) == ("f1", False, 2)
    assert (put.fact.invalidated_at, put.fact.invalidated_by) == (None, None)
    assert put.fact.history[-1].reason == "revived"
    assert plan.result.facts_added == 1


def _deleted_at_20() -> Fact:
    """f1, "Lives in Paris", deleted by a person at 20 (a delete names no replacement)."""
    return stored("f1", "Lives in Paris", invalidated=20)


def _said(op: FactAdd | FactUpdate, seconds: float | None) -> FactAdd | FactUpdate:
    return op.model_copy(update={"said_at": None if seconds is None else at(seconds)})


@pytest.mark.parametrize("said", [10, 20, None], ids=["before", "at", "unknown"])
def test_an_add_said_before_a_persons_delete_leaves_the_fact_deleted(said: float | None) -> None:
    plan = plan_formation(
        commit(ops=[_said(add("f3", "Lives in Paris", unit(1)), said)]), snapshot(_deleted_at_20())
    )
    assert puts(plan.writes) == []
    assert (plan.result.facts_added, plan.result.facts_duplicate) == (0, 1)


def test_the_ops_on_an_add_that_resolved_to_a_deleted_fact_leave_it_deleted() -> None:
    """A correction in the same window said before the delete, and a replacement of it, do not
    bring the fact back; the replacing fact is added."""
    ops = [
        _said(add("f3", "Lives in Paris", unit(1)), 10),
        _said(update("f3", "Lives in Paris 15e"), 12),
        _said(add("f4", "Lives in Rome", unit(0, 1)), 14),
        invalidate("f3", "f4"),
    ]
    plan = plan_formation(commit(ops=ops), snapshot(_deleted_at_20()))
    assert puts(plan.writes) == [("f4", "Lives in Rome", None, True)]
    assert (plan.result.facts_added, plan.result.facts_duplicate) == (1, 2)
    assert plan.result.facts_invalidated == 0


def test_a_fact_a_person_deleted_comes_back_when_told_again_after() -> None:
    plan = plan_formation(
        commit(ops=[_said(add("f3", "Lives in Paris", unit(1)), 30)]), snapshot(_deleted_at_20())
    )
    [put] = [w for w in plan.writes if isinstance(w, PutFact)]
    assert (put.fact.fact_id, put.fact.invalidated_at, put.fact.said_at) == ("f1", None, at(30))
    assert put.fact.history[-1].reason == "revived"
    # A correction said after the delete, of an add said before it, brings it back corrected.
    ops = [_said(add("f3", "Lives in Paris", unit(1)), 10), _said(update("f3", "Paris 15e"), 30)]
    plan = plan_formation(commit(ops=ops), snapshot(_deleted_at_20()))
    assert puts(plan.writes) == [("f1", "Paris 15e", None, False)]
    assert (plan.result.facts_updated, plan.result.facts_duplicate) == (1, 1)


def _formed(fact_id: str, content: str, said: float) -> Fact:
    """A fact formed from message m1 of session s0, said at T0 + said."""
    return stored(
        fact_id, content, said_at=at(said), formation_id="s0-form", source_session_id="s0",
        source_message_ids=("m1",),
    )  # fmt: skip


def _edited(fact: Fact, content: str, seconds: float) -> Fact:
    """The fact as a person corrected it at T0 + seconds (the memory page, PATCH …/facts/{id})."""
    return rewritten(fact, content=content, model=MODEL, at=at(seconds), reason="manual edit")


def _hand_deleted(fact: Fact, seconds: float) -> Fact:
    snap = FactSnapshot(fact=fact, same_content=(), embedding_meta=None)
    return plan_invalidate_fact(fact.fact_id, at=at(seconds), reason="delete", snapshot=snap).result


def _with_deleted(*deleted: Fact) -> FormationSnapshot:
    """The snapshot of a commit whose adds have none of the deleted facts' current texts: they
    are read as the agent's facts deleted by hand since its earliest add was said."""
    return replace(snapshot(), deleted=list(deleted))


def test_a_statement_said_before_a_persons_correction_does_not_undo_it() -> None:
    """Said at 5 "Works at Acme", corrected by hand at 50 to "Works at Initech"; a formation of
    messages said at 10 (after the fact's, before the correction) restates Acme: the correction
    stands, the statement kept in the fact's history, as for a statement said before the fact."""
    fact = _edited(_formed("f1", "Works at Acme", 5), "Works at Initech", 50)
    plan = plan_formation(
        commit(ops=[_said(update("f1", "Works at Acme", expected=2), 10)]), snapshot(fact)
    )
    [put] = [w.fact for w in plan.writes if isinstance(w, PutFact)]
    assert (put.content, put.version, put.invalidated_at) == ("Works at Initech", 3, None)
    assert (put.history[-1].content, put.history[-1].reason) == ("Works at Acme", LEARNT_LATE)
    # Said after the correction, it replaces it.
    plan = plan_formation(
        commit(ops=[_said(update("f1", "Works at Acme", expected=2), 60)]), snapshot(fact)
    )
    assert puts(plan.writes) == [("f1", "Works at Acme", None, False)]
    # A DELETE said before the correction does not retire it: the new fact is kept as replaced.
    ops = [_said(add("f3", "Works at Globex", unit(0, 1)), 10), invalidate("f1", "f3", expected=2)]
    plan = plan_formation(commit(ops=ops), snapshot(fact))
    assert puts(plan.writes)[-1] == ("f3", "Works at Globex", "f1", False)
    assert "f1" not in [fact_id for fact_id, *_ in puts(plan.writes)]


def test_an_add_said_before_a_delete_of_an_edited_fact_in_its_formed_words_leaves_it_deleted() -> (
    None
):
    """Formed "Lives at 12 Rue de Rivoli", corrected by hand to "… Rivoli, Paris", then deleted
    at 20: a formation of messages said at 10 restates the formed text (no longer the fact's
    current one). It is the deleted fact: a duplicate, nothing written. Said after the delete,
    it is new."""
    formed = _formed("f1", "Lives at 12 Rue de Rivoli", 5)
    gone = _hand_deleted(_edited(formed, "Lives at 12 Rue de Rivoli, Paris", 15), 20)
    before = commit(ops=[_said(add("f3", "Lives at 12 Rue de Rivoli", unit(0, 1)), 10)])
    assert formation_request(before).deleted_since == at(10)

    plan = plan_formation(before, _with_deleted(gone))
    assert puts(plan.writes) == []
    assert (plan.result.facts_added, plan.result.facts_duplicate) == (0, 1)

    after = commit(ops=[_said(add("f3", "Lives at 12 Rue de Rivoli", unit(0, 1)), 30)])
    plan = plan_formation(after, _with_deleted(gone))
    assert puts(plan.writes) == [("f3", "Lives at 12 Rue de Rivoli", None, True)]


def _rechecked(*ops: FactAdd | FactUpdate) -> FormationCommit:
    recheck = AddRecheck(candidates_read_at=at(90), similarity=0.8)
    return commit(ops=ops).model_copy(update={"recheck": recheck})


def test_a_distinct_fact_said_before_a_similar_one_was_deleted_is_added() -> None:
    """Deleted at 20 "User is allergic to peanuts"; a formation of messages said at 10 finds
    "User is allergic to penicillin", as similar to it as a dedup candidate may be (0.98 over a
    gate of 0.8): a distinct fact, added. Only a text the deleted fact held is that fact."""
    gone = _hand_deleted(_formed("f1", "User is allergic to peanuts", 5), 20)
    close = unit(1, 0.2)  # cosine 0.98 with the deleted fact's vector
    plan = plan_formation(
        _rechecked(_said(add("f3", "User is allergic to penicillin", close), 10)),
        _with_deleted(gone),
    )
    assert puts(plan.writes) == [("f3", "User is allergic to penicillin", None, True)]
    assert (plan.result.facts_added, plan.result.facts_duplicate) == (1, 0)


def test_update_keeps_history_and_bumps_the_version() -> None:
    plan = plan_formation(
        commit(ops=[update("f1", "Works at Globex")]), snapshot(stored("f1", "Works at Acme"))
    )
    [put] = [w for w in plan.writes if isinstance(w, PutFact)]
    fact = put.fact
    assert (fact.content, fact.version, fact.previous_content, fact.updated_at) == (
        "Works at Globex",
        2,
        "Works at Acme",
        at(100),
    )
    assert [(r.version, r.content, r.reason) for r in fact.history] == [
        (1, "Works at Acme", "changed")
    ]
    assert put.embedding == unit(0, 1)
    assert plan.result.facts_updated == 1


def test_several_updates_of_one_fact_chain_their_versions() -> None:
    """A correction of a correction in one window (issue #12): each update was decided against
    the stored version 1; they apply in order, the later wins, every version is in the history."""
    plan = plan_formation(
        commit(
            ops=[
                update("f1", "Locker number is 102"),
                update("f1", "Locker number is 103"),
            ]
        ),
        snapshot(stored("f1", "Locker number is 101")),
    )
    last = [w for w in plan.writes if isinstance(w, PutFact)][-1].fact
    assert (last.content, last.version) == ("Locker number is 103", 3)
    assert [(r.version, r.content) for r in last.history] == [
        (1, "Locker number is 101"),
        (2, "Locker number is 102"),
    ]
    assert plan.result.facts_updated == 2


def test_an_update_then_a_delete_of_one_fact_retires_its_latest_version() -> None:
    plan = plan_formation(
        commit(
            ops=[
                update("f1", "Likes green tea"),
                add("f9", "Dislikes tea", unit(0, 1)),
                invalidate("f1", "f9"),
            ]
        ),
        snapshot(stored("f1", "Likes tea")),
    )
    [*_, retired] = [
        w.fact for w in plan.writes if isinstance(w, PutFact) and w.fact.fact_id == "f1"
    ]
    assert (retired.content, retired.version, retired.invalidated_by) == (
        "Likes green tea",
        2,
        "f9",
    )
    assert (plan.result.facts_updated, plan.result.facts_invalidated) == (1, 1)


def test_a_chained_update_is_still_stale_against_a_fact_changed_by_someone_else() -> None:
    with pytest.raises(StaleDecisionError):
        plan_formation(
            commit(ops=[update("f1", "Locker number is 102"), update("f1", "Locker 103", 1)]),
            snapshot(stored("f1", "Locker number is 101", version=2)),
        )


def test_update_to_another_facts_content_invalidates_the_updated_one() -> None:
    plan = plan_formation(
        commit(ops=[update("f1", "Likes coffee")]),
        snapshot(stored("f1", "Likes tea"), stored("f2", "Likes coffee")),
    )
    assert puts(plan.writes) == [("f1", "Likes tea", "f2", False)]
    assert (plan.result.facts_updated, plan.result.facts_duplicate) == (0, 1)


def test_delete_with_a_replacement_that_resolved_to_a_duplicate_points_at_the_holder() -> None:
    plan = plan_formation(
        commit(ops=[add("f3", "Has a dog", unit(0, 1)), invalidate("f1", "f3")]),
        snapshot(stored("f1", "Has a cat"), stored("f2", "Has a dog")),
    )
    assert puts(plan.writes) == [("f1", "Has a cat", "f2", False)]
    assert (plan.result.facts_invalidated, plan.result.facts_duplicate) == (1, 1)


def test_delete_whose_replacement_resolved_to_the_fact_itself_changes_nothing() -> None:
    # f1 is valid with the replacement's content: the add is a duplicate of f1 itself.
    plan = plan_formation(
        commit(ops=[add("f3", "Has a cat", unit(1)), invalidate("f1", "f3")]),
        snapshot(stored("f1", "Has a cat")),
    )
    assert puts(plan.writes) == []
    assert plan.result.facts_invalidated == 0


def test_delete_needs_a_replacement_added_by_the_commit() -> None:
    with pytest.raises(InvalidInputError):
        plan_formation(commit(ops=[invalidate("f1", "nope")]), snapshot(stored("f1", "Has a cat")))


@pytest.mark.parametrize(
    ("facts", "op"),
    [
        ([stored("f1", "Plays chess", version=2)], update("f1", "Plays go", expected=1)),
        ([stored("f1", "Plays chess", invalidated=5)], update("f1", "Plays go")),
        ([stored("f1", "Plays chess", version=2)], invalidate("f1", "f5")),
    ],
)
def test_stale_decisions_are_refused(facts: list[Fact], op: FactUpdate | FactInvalidate) -> None:
    c = commit(ops=[add("f5", "Plays poker", unit(1, 1)), op])
    with pytest.raises(StaleDecisionError):
        plan_formation(c, snapshot(*facts))


@pytest.mark.parametrize(
    "fact",
    [stored("f1", "Lives in Munich", version=2), stored("f1", "Lives in Berlin", invalidated=5)],
    ids=["updated", "invalidated"],
)
def test_a_none_of_a_fact_changed_since_is_stale(fact: Fact) -> None:
    """NONE: "Lives in Berlin" was judged already known as f1 at version 1. The commit drops it
    only while f1 still says what was judged; else the formation decides again."""
    keep = FactKeep(fact_id="f1", expected_version=1)
    c = commit(ops=[add("f5", "Plays poker", unit(1, 1)), keep])
    assert formation_request(c).fact_ids == ("f5", "f1")  # the snapshot reads the kept fact

    with pytest.raises(StaleDecisionError):
        plan_formation(c, snapshot(fact))
    # Unchanged, it commits, and the kept fact is not written.
    plan = plan_formation(c, snapshot(stored("f1", "Lives in Berlin")))
    assert puts(plan.writes) == [("f5", "Plays poker", None, True)]


def test_cursor_conflict_and_unknown_agent() -> None:
    moved = STATE.model_copy(update={"cursor_seq": 1})
    with pytest.raises(ConflictError):
        plan_formation(commit(), snapshot(state=moved))
    with pytest.raises(InvalidInputError):
        plan_formation(commit(new_cursor=9), snapshot())


def test_embedding_model_must_match_the_stored_one() -> None:
    with pytest.raises(EmbeddingMismatchError):
        plan_formation(commit(ops=[add("f1", "x", unit(1))], model="other"), snapshot())


def test_a_used_fact_id_of_another_content_is_refused() -> None:
    other_agent = stored("f1", "Something else", agent_id="a2")
    with pytest.raises(InvalidInputError, match="already used"):
        plan_formation(commit(ops=[add("f1", "Likes tea", unit(1))]), snapshot(other_agent))


def test_replay_returns_the_stored_result_and_writes_nothing() -> None:
    done = FormationCommitResult(formation_id="x", facts_added=2)
    plan = plan_formation(commit(ops=[add("f1", "Likes tea", unit(1))]), snapshot(done=done))
    assert plan.writes == ()
    assert plan.result == done.model_copy(update={"already_committed": True})


def test_existing_reflections_are_left_alone() -> None:
    r = reflection(USER_KEY, 1)
    c = commit(reflections=[r, r])
    plan = plan_formation(
        c, snapshot(existing=frozenset({r.reflection_id}), buffered={USER_KEY.key: 1})
    )
    assert not any(isinstance(w, InsertReflections) for w in plan.writes)
    assert (plan.result.reflections_added, plan.result.buffered) == (0, {USER_KEY.key: 1})
    fresh = plan_formation(commit(reflections=[r, r]), snapshot())
    [insert] = [w for w in fresh.writes if isinstance(w, InsertReflections)]
    assert insert.reflections == (r,)


def test_commit_for_another_agents_reflection_is_refused() -> None:
    from memory.models import ScopeKey

    other = reflection(ScopeKey(scope="agent", agent_id="a2"), 1)
    with pytest.raises(InvalidInputError):
        plan_formation(commit(reflections=[other]), snapshot())


def test_delete_with_a_replacement_that_revived_a_fact_points_at_the_revived_one() -> None:
    plan = plan_formation(
        commit(ops=[add("f3", "Lives in Rome", unit(0, 1)), invalidate("f1", "f3")]),
        snapshot(
            stored("f1", "Lives in Paris"),
            stored("f0", "Lives in Rome", invalidated=5, invalidated_by="fx"),
        ),
    )
    assert puts(plan.writes) == [
        ("f0", "Lives in Rome", None, False),
        ("f1", "Lives in Paris", "f0", False),
    ]
    assert (plan.result.facts_added, plan.result.facts_invalidated) == (1, 1)


def _moved() -> tuple[Fact, Fact]:
    """Berlin said at 5, retired at 50 by Paris, said at 40."""
    paris = _formed("f2", "Lives in Paris", 40)
    berlin = _formed("f1", "Lives in Berlin", 5).model_copy(
        update={"invalidated_at": at(50), "invalidated_by": "f2"}
    )
    return berlin, paris


def test_a_correction_of_an_add_said_before_what_retired_its_text_keeps_it_retired() -> None:
    """A backfilled window says Berlin at 10 and corrects it at 12, both before the move to
    Paris: the add is kept as its own fact, replaced by Paris, and the correction in its
    history; Paris stands and the retired Berlin is not revived. Corrected after the move (at
    45), the correction is what was said last, and replaces it."""
    ops = [
        _said(add("f3", "Lives in Berlin", unit(1)), 10),
        _said(update("f3", "Berlin Mitte"), 12),
    ]
    plan = plan_formation(commit(ops=ops), snapshot(*_moved()))
    assert puts(plan.writes) == [
        ("f3", "Lives in Berlin", "f2", True),
        ("f3", "Lives in Berlin", "f2", False),
    ]
    [*_, kept] = [w.fact for w in plan.writes if isinstance(w, PutFact)]
    assert (kept.history[-1].content, kept.history[-1].reason) == ("Berlin Mitte", LEARNT_LATE)

    ops = [
        _said(add("f3", "Lives in Berlin", unit(1)), 10),
        _said(update("f3", "Berlin Mitte"), 45),
    ]
    plan = plan_formation(commit(ops=ops), snapshot(*_moved()))
    assert puts(plan.writes)[-1] == ("f3", "Berlin Mitte", None, False)
