"""commit_formation, planned: the whole algorithm on a snapshot, without I/O.

A backend reads ``formation_request(commit)``'s snapshot inside its transaction, calls
``plan_formation`` and applies the writes in that same transaction. Any error raised here leaves
nothing written. The rules:

- A formation id already committed returns its stored result with already_committed=True.
- The cursor of (session, agent) must equal expected_cursor, else ConflictError.
- A user-scope fact add or user reflection names one of the agent's participants of the session
  (a user who spoke there since the agent joined), else InvalidInputError: user memory belongs
  to the user who said it.
- The commit's vectors share one dimension, and the stored model/dimension (the first commit
  sets them), else EmbeddingMismatchError.
- Fact ops: planned by ``fact_ops.FactPlanner`` (its rules are written there).
- An add said before a person deleted a fact is that fact when it held the add's text in any
  version (an edit before the delete); a similar text is no match (it may be a distinct fact):
  the snapshot holds the agent's facts deleted by hand since the commit's earliest add was said
  (hand deletes are rare; no vectors), and ``fact_ops`` resolves the add to the deleted one.
- An add that would be new is re-checked against the agent's facts committed since the commit's
  candidates were read (``recheck``): one as similar as a candidate is StaleDecisionError.
- Reflections are inserted by id (existing ids are left alone), and not when their text is
  already in their scope key's memory (buffered, set aside, or absorbed into the key's current
  blob: ``recheck.in_memory``) or repeated in the commit.
- cursor = new_cursor; pending counters = the messages after it; formations + 1; the versions of
  every touched scope key are bumped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memory.errors import InvalidInputError
from memory.formation_commit import FactAdd, FactUpdate, FormationCommit, FormationCommitResult
from memory.ids import content_hash
from memory.models import Fact, Reflection, SessionAgentState
from memory.store.rules.checks import (
    check_cursor,
    check_embedding_meta,
    commit_dimension,
)
from memory.store.rules.erasure import (
    commit_users,
    discarded,
    erased_since,
    unstored_embeddings,
)
from memory.store.rules.fact_ops import FactPlanner
from memory.store.rules.recheck import (
    RecentFacts,
    in_memory,
    recent_since,
    reflection_text_key,
    unseen_reflections,
)
from memory.store.rules.writes import (
    BumpScopeVersions,
    InsertReflections,
    MoveCursor,
    Plan,
    RecordDegraded,
    RecordFormation,
    Request,
    SetEmbeddingMeta,
    Write,
    user_key,
)


@dataclass(frozen=True)
class FormationSnapshot:
    done: FormationCommitResult | None
    state: SessionAgentState | None
    embedding_meta: tuple[str, int] | None
    facts: Sequence[Fact]
    existing_reflections: frozenset[str]
    buffered: Mapping[str, int]  # scope key -> unabsorbed count (missing: 0)
    pending_after: tuple[int, float]  # messages after new_cursor
    participants: frozenset[str] = frozenset()  # the agent's users of the session
    epochs: Mapping[str, int] = field(default_factory=dict)  # users' erasure epochs (erasure)
    # The agent's valid facts inserted or updated since recent_since, with their vectors.
    recent: Sequence[tuple[Fact, Sequence[float]]] = ()
    # (scope key, whitespace-normalised content, absorbed_into_version) of the stored reflections
    # among reflection_texts.
    reflection_texts: frozenset[tuple[str, str, int | None]] = frozenset()
    # The version of each scope key's blob (missing: 0, none) when reflection_texts found any.
    blob_versions: Mapping[str, int] = field(default_factory=dict)
    # The agent's facts a person deleted since deleted_since.
    deleted: Sequence[Fact] = ()


@dataclass(frozen=True)
class FormationRequest(Request[FormationSnapshot]):
    """What to read for a commit."""

    formation_id: str
    session_id: str
    agent_id: str
    fact_ids: tuple[str, ...]  # every fact id an op names: facts by id, any agent
    hashes: tuple[str, ...]  # the agent's facts with one of these hashes, valid or not
    reflection_ids: tuple[str, ...]  # which of these exist
    scope_keys: tuple[str, ...]  # unabsorbed reflections per key, before the commit
    new_cursor: int  # pending messages (count, weighted tokens) after this seq
    users: tuple[str, ...] = ()  # their erasure epochs (rules.erasure)
    recent_since: datetime | None = None  # valid facts inserted or updated since, with vectors
    # ... of these owners only (a user id; "" the agent's own facts): an add is re-checked against
    # the facts of its own owner (rules.recheck.check_add), so a busy agent's commit does not read
    # every fact its other users formed in the last minute inside its write transaction.
    recent_owners: tuple[str, ...] = ()
    # Reflections of these keys with one of these contents (raw and normalised), absorbed or not,
    # and those keys' blob versions.
    reflection_texts: tuple[str, ...] = ()
    # The agent's facts (of recent_owners) a person deleted at or after this time: an add said
    # before a delete may state the deleted fact in another of its versions' words.
    deleted_since: datetime | None = None

    def serialized_on(self) -> tuple[str, ...]:
        # Keeps and re-checks read the agent's facts; the erasure check reads the users' epochs.
        return ("agent:" + self.agent_id, *map(user_key, self.users))


def formation_request(commit: FormationCommit) -> FormationRequest:
    contents = [op.content for op in commit.fact_ops if isinstance(op, FactAdd | FactUpdate)]
    return FormationRequest(
        formation_id=commit.formation_id,
        session_id=commit.session_id,
        agent_id=commit.agent_id,
        fact_ids=tuple(dict.fromkeys(op.fact_id for op in commit.fact_ops)),
        hashes=tuple(dict.fromkeys(content_hash(text) for text in contents)),
        reflection_ids=tuple(dict.fromkeys(r.reflection_id for r in commit.reflections)),
        scope_keys=tuple(sorted({r.scope_key.key for r in commit.reflections})),
        new_cursor=commit.new_cursor,
        users=commit_users(commit),
        recent_since=recent_since(commit.recheck),
        recent_owners=tuple(
            sorted({op.user_id or "" for op in commit.fact_ops if isinstance(op, FactAdd)})
        ),
        reflection_texts=tuple(
            dict.fromkeys(
                text
                for r in commit.reflections
                for text in (r.content, reflection_text_key("", r.content)[1])
            )
        ),
        deleted_since=_earliest_add(commit),
    )


def _earliest_add(commit: FormationCommit) -> datetime | None:
    """When the commit's earliest add was said: a fact deleted by hand after it may be one an add
    states (an add not known when said matches a deleted fact by its current text only)."""
    said = [op.said_at for op in commit.fact_ops if isinstance(op, FactAdd) and op.said_at]
    return min(said, default=None)


def _check_owners(commit: FormationCommit, participants: frozenset[str]) -> None:
    """User memory only for a user who spoke in this agent's view of the session."""
    owners = [(op.fact_id, op.user_id) for op in commit.fact_ops if isinstance(op, FactAdd)]
    owners += [(r.reflection_id, r.scope_key.user_id) for r in commit.reflections]
    for item, user_id in owners:
        if user_id is not None and user_id not in participants:
            raise InvalidInputError(
                f"{item}: user {user_id!r} is not a participant of session {commit.session_id}"
            )


def _new_reflections(
    commit: FormationCommit, existing: frozenset[str], texts: frozenset[tuple[str, str]]
) -> tuple[tuple[Reflection, ...], set[str]]:
    """(the reflections to insert: first of each id and text, not stored yet; scope keys of them
    all)."""
    keys: set[str] = set()
    new: dict[str, Reflection] = {}
    for reflection in commit.reflections:
        if reflection.scope_key.agent_id != commit.agent_id:
            raise InvalidInputError(f"reflection {reflection.reflection_id} of another agent")
        keys.add(reflection.scope_key.key)
    for reflection in unseen_reflections(commit.reflections, texts):
        if reflection.reflection_id not in existing:
            new.setdefault(reflection.reflection_id, reflection)
    return tuple(new.values()), keys


def plan_formation(
    commit: FormationCommit, snapshot: FormationSnapshot
) -> Plan[FormationCommitResult]:
    if snapshot.done is not None:
        return Plan((), snapshot.done.model_copy(update={"already_committed": True}))
    if erased_since(commit, snapshot.epochs):
        return discarded(commit)
    state = check_cursor(snapshot.state, commit)
    _check_owners(commit, snapshot.participants)
    writes: list[Write] = []
    dimension = commit_dimension(commit)
    if dimension is not None:
        if snapshot.embedding_meta is None:
            writes.append(SetEmbeddingMeta(commit.embedding_model, dimension))
        else:
            check_embedding_meta(commit, dimension, snapshot.embedding_meta)

    read = {fact.fact_id: fact for fact in snapshot.deleted}
    read |= {fact.fact_id: fact for fact in snapshot.facts}
    facts = FactPlanner(commit, dict(read), read, RecentFacts(snapshot.recent), snapshot.deleted)
    facts.apply()
    writes += facts.writes
    repeated = in_memory(snapshot.reflection_texts, snapshot.blob_versions)
    reflections, keys = _new_reflections(commit, snapshot.existing_reflections, repeated)
    if reflections:
        writes.append(InsertReflections(reflections))
    if touched := facts.touched | keys:
        writes.append(BumpScopeVersions(tuple(sorted(touched))))

    pending, tokens = snapshot.pending_after
    after = state.model_copy(
        update={
            "cursor_seq": commit.new_cursor,
            "formations": state.formations + 1,
            "pending_messages": pending,
            # Sums of floats may drift a hair below zero; the model forbids < 0.
            "pending_weighted_tokens": max(0.0, tokens),
        }
    )
    writes.append(MoveCursor(after))
    added = {key: 0 for key in keys}
    for reflection in reflections:
        added[reflection.scope_key.key] += 1
    result = FormationCommitResult(
        formation_id=commit.formation_id,
        facts_added=facts.counts["added"],
        facts_updated=facts.counts["updated"],
        facts_invalidated=facts.counts["invalidated"],
        facts_duplicate=facts.counts["duplicate"],
        reflections_added=len(reflections),
        buffered={key: snapshot.buffered.get(key, 0) + added[key] for key in sorted(keys)},
        state=after,
    )
    writes += unstored_embeddings(commit, writes)
    if commit.degraded:  # in the commit: a forget after it finds them, a retry is done
        writes.append(RecordDegraded(tuple(commit.degraded)))
    writes.append(RecordFormation(result, commit.committed_at))
    return Plan(tuple(writes), result)
