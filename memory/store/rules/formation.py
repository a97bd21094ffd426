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
- Fact ops: adds and updates in order, then invalidations. Several ops on one fact (a correction
  of a correction in one window) chain: each is checked against the version the decisions read
  (the snapshot's), and applies to the version the op before it made, so every version is kept.
  An add is skipped as a duplicate when a valid fact of the same agent/user/scope has the same
  hash, and revives the latest invalidated one with that hash, unless a person deleted that one
  after the add was said (or when it was said is not known: ``versions.deleted_since``): the
  delete stands (never shown again), and the add is counted a duplicate, resolved to the deleted
  fact, which an update said before the delete or an invalidation naming the add leaves as it
  is; the fact told again after the delete comes back. An update is StaleDecisionError when the
  fact's version != expected_version or it is invalidated; it keeps previous_content and
  history, version + 1; when its new content is another valid fact's, the updated fact is
  invalidated in favour of that one (a duplicate). An invalidation names the add of this commit
  that replaces the fact; that add may have resolved to an existing fact (duplicate, revived or
  deleted), maybe this very one.
- A keep (a NONE: the new fact is already known as the named one) writes nothing, and is
  StaleDecisionError as an update is: the statement it drops must still be what that fact says.
- An update, invalidation or keep may name a fact added earlier in the same commit (a correction
  within one window); it applies to the fact that add resolved to (itself, a duplicate or a
  revived one), whatever that one's version.
- An update or invalidation by a statement said before the fact's current version (a message
  recorded late) does not replace it: an update keeps the earlier statement in the fact's
  history (version + 1, content unchanged); an invalidation marks the earlier statement's new
  fact as replaced by the stored one.
- An add that would be new is re-checked against the agent's facts committed since the commit's
  candidates were read (``recheck``): one as similar as a candidate is StaleDecisionError.
- Reflections are inserted by id (existing ids are left alone), and not when their text is
  already stored in their scope key (buffered or absorbed) or repeated in the commit.
- cursor = new_cursor; pending counters = the messages after it; formations + 1; the versions of
  every touched scope key are bumped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memory.errors import InvalidInputError, NotFoundError
from memory.ids import content_hash
from memory.models import (
    Fact,
    FactAdd,
    FactInvalidate,
    FactKeep,
    FactUpdate,
    FormationCommit,
    FormationCommitResult,
    Reflection,
    SessionAgentState,
)
from memory.said import split
from memory.store.rules.checks import (
    check_current,
    check_cursor,
    check_embedding_meta,
    commit_dimension,
)
from memory.store.rules.derived import fact_scope_key
from memory.store.rules.erasure import (
    commit_users,
    discarded,
    erased_since,
    unstored_embeddings,
)
from memory.store.rules.recheck import (
    RecentFacts,
    check_add,
    recent_since,
    reflection_text_key,
    unseen_reflections,
)
from memory.store.rules.versions import (
    Provenance,
    deleted_by_hand,
    deleted_since,
    rewritten,
    said_before,
    told_before,
)
from memory.store.rules.writes import (
    BumpScopeVersions,
    InsertReflections,
    MoveCursor,
    Plan,
    PutFact,
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
    # The agent's valid facts updated since recent_since, with their vectors.
    recent: Sequence[tuple[Fact, Sequence[float]]] = ()
    # (scope key, whitespace-normalised content) of the stored reflections among reflection_texts.
    reflection_texts: frozenset[tuple[str, str]] = frozenset()


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
    recent_since: datetime | None = None  # the agent's valid facts updated since, with vectors
    # ... of these owners only (a user id; "" the agent's own facts): an add is re-checked against
    # the facts of its own owner (rules.recheck.check_add), so a busy agent's commit does not read
    # every fact its other users formed in the last minute inside its write transaction.
    recent_owners: tuple[str, ...] = ()
    # Reflections of these keys with one of these contents (raw and normalised), absorbed or not.
    reflection_texts: tuple[str, ...] = ()

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
    )


def same_fact(fact: Fact, agent_id: str, scope: str, user_id: str | None, hash_: str) -> bool:
    """The dedup key: one valid fact per (agent, user, scope, normalised content)."""
    key = (agent_id, scope, user_id or "", hash_)
    return (fact.agent_id, fact.scope, fact.user_id or "", fact.hash) == key


@dataclass
class _FactPlanner:
    """Applies the fact ops to an in-memory view of the snapshot's facts, so that each op sees
    the effects of the ones before it (two adds of one content, an invalidation whose
    replacement resolved to a duplicate or a revived fact)."""

    commit: FormationCommit
    facts: dict[str, Fact]
    read: Mapping[str, Fact]  # the snapshot's facts: what the decisions were made against
    recent: RecentFacts = field(default_factory=lambda: RecentFacts(()))
    writes: list[Write] = field(default_factory=list)
    resolved: dict[str, str] = field(default_factory=dict)  # FactAdd.fact_id -> holder
    counts: dict[str, int] = field(
        default_factory=lambda: {"added": 0, "updated": 0, "invalidated": 0, "duplicate": 0}
    )
    touched: set[str] = field(default_factory=set)

    def apply(self) -> None:
        for op in self.commit.fact_ops:
            if isinstance(op, FactAdd):
                self._add(op)
            elif isinstance(op, FactUpdate):
                self._update(op)
            elif isinstance(op, FactKeep):
                self._current(op.fact_id, op.expected_version)  # the check is all it does
        for op in self.commit.fact_ops:
            if isinstance(op, FactInvalidate):
                self._invalidate(op)

    def _put(self, fact: Fact, embedding: Sequence[float] | None, *, new: bool = False) -> None:
        self.facts[fact.fact_id] = fact
        self.writes.append(PutFact(fact, embedding, new))
        self.touched.add(fact_scope_key(fact))

    def _current(self, fact_id: str, expected_version: int) -> Fact:
        if (holder := self.resolved.get(fact_id)) is not None:
            # A fact this commit added (a correction within its window): the op was decided
            # against that new fact, and applies to whichever fact its add resolved to.
            return self.facts[holder]
        fact = self.facts.get(fact_id)
        if fact is None or fact.agent_id != self.commit.agent_id:
            raise NotFoundError(f"no fact {fact_id} of agent {self.commit.agent_id}")
        before = self.read.get(fact_id, fact)
        check_current(
            fact_id,
            version=before.version,
            invalidated=before.invalidated_at is not None,
            expected_version=expected_version,
        )
        return fact

    def _find(self, scope: str, user_id: str | None, hash_: str, *, valid: bool) -> Fact | None:
        found = [
            f
            for f in self.facts.values()
            if same_fact(f, self.commit.agent_id, scope, user_id, hash_)
            and (f.invalidated_at is None) == valid
        ]
        # Of several invalidated ones, the latest (valid ones are unique).
        found.sort(key=lambda f: (f.invalidated_at or f.updated_at, f.fact_id), reverse=True)
        return found[0] if found else None

    def _source(self, op: FactAdd | FactUpdate) -> Provenance:
        formation, session = self.commit.formation_id, self.commit.session_id
        return Provenance(op.source_message_ids, formation, op.said_at, session)

    def _rewrite(self, fact: Fact, op: FactAdd | FactUpdate, reason: str) -> None:
        at, model = self.commit.committed_at, self.commit.embedding_model
        new = rewritten(
            fact, content=op.content, model=model, at=at, reason=reason, provenance=self._source(op)
        )
        self._put(new, op.embedding)

    def _add(self, op: FactAdd) -> None:
        if (op.scope == "user") != (op.user_id is not None):
            raise InvalidInputError(f"fact {op.fact_id}: user scope needs a user_id, agent none")
        hash_ = content_hash(op.content)
        duplicate = self._find(op.scope, op.user_id, hash_, valid=True)
        if duplicate is not None:
            self.resolved[op.fact_id] = duplicate.fact_id
            self.counts["duplicate"] += 1
            return
        invalidated = self._find(op.scope, op.user_id, hash_, valid=False)
        if invalidated is not None and deleted_since(op.said_at, invalidated):
            # A person deleted it after this was said: the delete stands, and the statement is
            # one already known (as deleted), dropped as a NONE would be.
            self.resolved[op.fact_id] = invalidated.fact_id
            self.counts["duplicate"] += 1
            return
        if invalidated is not None:
            self._rewrite(invalidated, op, "revived")
            self.resolved[op.fact_id] = invalidated.fact_id
            self.counts["added"] += 1
            return
        if op.fact_id in self.facts:
            raise InvalidInputError(f"fact id {op.fact_id} is already used")
        check_add(op, self.commit.recheck, self.recent)
        at, (said_at, offset) = self.commit.committed_at, split(op.said_at)
        fact = Fact(
            fact_id=op.fact_id, agent_id=self.commit.agent_id, user_id=op.user_id,
            scope=op.scope, content=op.content, hash=hash_,
            embedding_model=self.commit.embedding_model, said_utc_offset_minutes=offset,
            source_session_id=self.commit.session_id, source_message_ids=op.source_message_ids,
            formation_id=self.commit.formation_id, said_at=said_at, formed_at=at, updated_at=at,
        )  # fmt: skip
        self._put(fact, op.embedding, new=True)
        self.resolved[op.fact_id] = op.fact_id
        self.counts["added"] += 1

    def _update(self, op: FactUpdate) -> None:
        fact = self._current(op.fact_id, op.expected_version)
        if deleted_since(op.said_at, fact):
            # A correction of this commit's add that resolved to a fact a person deleted: said
            # before the delete, it does not bring it back either (as the add it corrects).
            self.counts["duplicate"] += 1
            return
        if said_before(op.said_at, fact):
            at, source = self.commit.committed_at, self._source(op)
            self._put(told_before(fact, content=op.content, at=at, provenance=source), None)
            self.counts["updated"] += 1
            return
        hash_ = content_hash(op.content)
        duplicate = None
        if hash_ != fact.hash:
            duplicate = self._find(fact.scope, fact.user_id, hash_, valid=True)
        if duplicate is None:
            self._rewrite(fact, op, op.reason)
            self.counts["updated"] += 1
            return
        # The new content is another valid fact's: the two are one fact now; keep that one.
        self._mark_invalid(fact, duplicate.fact_id)
        self.counts["duplicate"] += 1

    def _invalidate(self, op: FactInvalidate) -> None:
        fact = self._current(op.fact_id, op.expected_version)
        replacement = self.resolved.get(op.replaced_by)
        if replacement is None:
            raise InvalidInputError(f"{op.replaced_by} is not a fact added by this commit")
        if replacement == fact.fact_id:
            # The replacement turned out to be this very fact (same content): nothing to replace.
            return
        if deleted_by_hand(fact) is not None:
            # This commit's add resolved to a fact a person deleted: it stays as they left it.
            return
        if replacement == op.replaced_by and said_before(self.facts[replacement].said_at, fact):
            # Retired by what was said before it: the later statement stands, and the earlier
            # one, new in this commit, is kept as replaced by it.
            self._mark_invalid(self.facts[replacement], fact.fact_id)
            self.counts["invalidated"] += 1
            return
        self._mark_invalid(fact, replacement)
        self.counts["invalidated"] += 1

    def _mark_invalid(self, fact: Fact, replaced_by: str) -> None:
        update = {"invalidated_at": self.commit.committed_at, "invalidated_by": replaced_by}
        self._put(fact.model_copy(update=update), None)


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

    read = {fact.fact_id: fact for fact in snapshot.facts}
    facts = _FactPlanner(commit, dict(read), read, RecentFacts(snapshot.recent))
    facts.apply()
    writes += facts.writes
    reflections, keys = _new_reflections(
        commit, snapshot.existing_reflections, snapshot.reflection_texts
    )
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
