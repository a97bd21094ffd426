"""A formation commit's fact ops, planned on an in-memory view of the snapshot's facts.

- Fact ops: adds and updates in order, then invalidations. Several ops on one fact (a correction
  of a correction in one window) chain: each is checked against the version the decisions read
  (the snapshot's), and applies to the version the op before it made, so every version is kept.
  An add is skipped as a duplicate when a valid fact of the same agent/user/scope has the same
  hash, and revives the latest invalidated one with that hash, unless a person deleted that one
  after the add was said (or when it was said is not known: ``versions.deleted_since``): the
  delete stands (never shown again), and the add is counted a duplicate, resolved to the deleted
  fact, which an update said before the delete or an invalidation naming the add leaves as it
  is; the fact told again after the delete comes back. So is an add said before a person
  deleted a fact that held its text in any version (an edit before the delete); a merely
  similar add is not (it may be a distinct fact: penicillin, not peanuts) and is added. An add
  said before the statement that retired that invalidated fact (a formation's DELETE, or an
  update into it: ``_retired_after``; a backfilled conversation) does not revive it either: it
  is added as its own fact, retired by that statement's fact, the later statement standing, as
  an invalidation by an earlier statement leaves it (below). An update is
  StaleDecisionError when the fact's version != expected_version or it is invalidated; it keeps
  previous_content and history, version + 1; when its new content is another valid fact's, the
  updated fact is invalidated in favour of that one (a duplicate). An invalidation names the add of this commit
  that replaces the fact; that add may have resolved to an existing fact (duplicate, revived or
  deleted), maybe this very one.
- A keep (a NONE: the new fact is already known as the named one) writes no text, and is
  StaleDecisionError as an update is: the statement it drops must still be what that fact says.
  Said after the fact (and after a person last corrected it), it is the fact's latest statement:
  the fact takes its time and cites it, its text and version unchanged, so that a statement said
  in between and learnt late does not replace it. Said at the fact's time or before, or after
  this commit changed the fact's text (it repeats the text replaced), it moves nothing.
- An update, invalidation or keep may name a fact added earlier in the same commit (a correction
  within one window); it applies to the fact that add resolved to (itself, a duplicate or a
  revived one), whatever that one's version.
- An update or invalidation by a statement said before the fact's current version (a message
  recorded late) or before a person last corrected it (``versions.said_before``) does not
  replace it: an update keeps the earlier statement in the fact's history (version + 1, content
  unchanged); an invalidation marks the earlier statement's new fact as replaced by the stored
  one. An invalidation's statement was said when its add was, or when the fact that add
  resolved to was, whichever is later (a duplicate said since may replace the fact); one that
  resolved to an existing fact leaves that fact as it is. An update of an add kept as retired,
  said before what retired it too, keeps it retired, the update in its history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memory.errors import InvalidInputError, NotFoundError
from memory.formation_commit import FactAdd, FactInvalidate, FactKeep, FactUpdate, FormationCommit
from memory.ids import content_hash
from memory.models import Fact, FactScope
from memory.said import split
from memory.store.rules.checks import check_current
from memory.store.rules.derived import fact_scope_key
from memory.store.rules.recheck import RecentFacts, check_add
from memory.store.rules.versions import (
    Provenance,
    cited_before,
    deleted_by_hand,
    deleted_since,
    edited_by_hand,
    rewritten,
    said_before,
    sourced_as,  # the sources a version of the same text cites (one rule, with rewritten)
    told_before,
    version_hashes,
)
from memory.store.rules.writes import PutFact, Write


def same_fact(fact: Fact, agent_id: str, scope: str, user_id: str | None, hash_: str) -> bool:
    """The dedup key: one valid fact per (agent, user, scope, normalised content)."""
    return same_owner(fact, agent_id, scope, user_id) and fact.hash == hash_


def same_owner(fact: Fact, agent_id: str, scope: str, user_id: str | None) -> bool:
    return (fact.agent_id, fact.scope, fact.user_id or "") == (agent_id, scope, user_id or "")


@dataclass
class FactPlanner:
    """Applies the fact ops to an in-memory view of the snapshot's facts, so that each op sees
    the effects of the ones before it (two adds of one content, an invalidation whose
    replacement resolved to a duplicate or a revived fact)."""

    commit: FormationCommit
    facts: dict[str, Fact]
    read: Mapping[str, Fact]  # the snapshot's facts: what the decisions were made against
    recent: RecentFacts = field(default_factory=lambda: RecentFacts(()))
    # The agent's facts a person deleted since the commit's earliest add was said.
    deleted: Sequence[Fact] = ()
    writes: list[Write] = field(default_factory=list)
    resolved: dict[str, str] = field(default_factory=dict)  # FactAdd.fact_id -> holder
    said: dict[str, datetime | None] = field(default_factory=dict)  # FactAdd.fact_id -> said_at
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
                self._keep(op)
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

    def _source(self, op: FactAdd | FactUpdate | FactKeep) -> Provenance:
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
        self.said[op.fact_id] = op.said_at
        duplicate = self._find(op.scope, op.user_id, hash_, valid=True)
        if duplicate is not None:
            self.resolved[op.fact_id] = duplicate.fact_id
            self.counts["duplicate"] += 1
            return
        deleted = self._deleted_statement(op.scope, op.user_id, op.said_at, hash_)
        if deleted is not None:
            # A person deleted it after this was said: the delete stands, and the statement is
            # one already known (as deleted), dropped as a NONE would be.
            self.resolved[op.fact_id] = deleted.fact_id
            self.counts["duplicate"] += 1
            return
        invalidated = self._find(op.scope, op.user_id, hash_, valid=False)
        retired_by = None if invalidated is None else self._retired_after(op.said_at, invalidated)
        if invalidated is not None and retired_by is None:
            self._rewrite(invalidated, op, "revived")
            self.resolved[op.fact_id] = invalidated.fact_id
            self.counts["added"] += 1
            return
        # New; or said before what retired the fact of its text (a conversation backfilled
        # after a later one): what was said is kept, and the later statement stands.
        self._insert(op, hash_, retired_by)

    def _insert(self, op: FactAdd, hash_: str, retired_by: Fact | None) -> None:
        """The add as a new fact; retired by ``retired_by`` (said after it) when given."""
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
        if retired_by is not None:
            fact = fact.model_copy(
                update={"invalidated_at": at, "invalidated_by": retired_by.fact_id}
            )
        self._put(fact, op.embedding, new=True)
        self.resolved[op.fact_id] = op.fact_id
        self.counts["added"] += 1

    def _retired_after(self, said_at: datetime | None, fact: Fact) -> Fact | None:
        """The fact a formation retired ``fact`` in favour of (a DELETE, or an update into it),
        when that one was said after ``said_at`` (``versions.said_before``: its current
        version, which a later reaffirmation moves on, or a person's edit): a statement said
        before it must not bring ``fact`` back. None: valid, deleted by hand
        (``deleted_since``), or retired by what was said before (or is not in the snapshot)."""
        if fact.invalidated_at is None or fact.invalidated_by is None:
            return None
        retirer = self.facts.get(fact.invalidated_by)
        if retirer is None or not said_before(said_at, retirer):
            return None
        return retirer

    def _deleted_statement(
        self, scope: FactScope, user_id: str | None, said_at: datetime | None, hash_: str
    ) -> Fact | None:
        """The fact of this owner a person deleted after a statement of ``hash_`` was said
        (``versions.deleted_since``) that the statement states, as an add or as the new text of
        an update: its latest invalidated fact of this text (when it was said is not known: any
        delete), or a deleted fact that held this text in any version (an edit before the
        delete). Only the text tells: a similar statement may be a distinct fact (allergic to
        penicillin, not peanuts), and dropping it would lose what the user said."""
        latest = self._find(scope, user_id, hash_, valid=False)
        if latest is not None and deleted_since(said_at, latest):
            return latest
        if said_at is None:
            return None
        for fact in self.deleted:
            if (
                same_owner(fact, self.commit.agent_id, scope, user_id)
                and deleted_since(said_at, fact)
                and hash_ in version_hashes(fact)
            ):
                return fact
        return None

    def _update(self, op: FactUpdate) -> None:
        fact = self._current(op.fact_id, op.expected_version)
        if deleted_since(op.said_at, fact):
            # A correction of this commit's add that resolved to a fact a person deleted: said
            # before the delete, it does not bring it back either (as the add it corrects).
            self.counts["duplicate"] += 1
            return
        # Said before the fact's version, or before what retired it (a correction of an add
        # kept as retired, said before the statement that retired it): it stays as it is.
        if said_before(op.said_at, fact) or self._retired_after(op.said_at, fact) is not None:
            at, source = self.commit.committed_at, self._source(op)
            self._put(told_before(fact, content=op.content, at=at, provenance=source), None)
            self.counts["updated"] += 1
            return
        hash_ = content_hash(op.content)
        if hash_ != fact.hash and self._deleted_statement(
            fact.scope, fact.user_id, op.said_at, hash_
        ):
            # Its new text is one a person deleted after it was said (as another fact): the
            # delete stands, and this fact keeps its own (an add of it would be dropped too).
            self.counts["duplicate"] += 1
            return
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

    def _keep(self, op: FactKeep) -> None:
        """The statement is the fact's, already known (``_current`` checks that the fact is
        still what the decision read). Said later than the fact, it moves the fact's said_at and
        sources to it in place: a repeat is no new version, so decisions made against the fact's
        version stay valid. Cited from another session, the citation it replaces is kept in the
        history (``cited_before``); a repeat in the same session adds to its sources."""
        fact = self._current(op.fact_id, op.expected_version)
        if not self._said_later(op, fact):
            return
        at = self.commit.committed_at
        restated: dict[str, object] = {
            **sourced_as(fact, self._source(op), fact.content),
            "updated_at": at,
        }
        if "source_session_id" in restated:  # cited elsewhere: the first citation is kept
            restated["history"] = (*fact.history, cited_before(fact, at))
        self._put(fact.model_copy(update=restated), None)

    def _said_later(self, op: FactKeep, fact: Fact) -> bool:
        """Whether a keep's statement is later than what the fact holds: said after its time
        (an equal time is nothing new: a retried plan writes the same), of a fact still valid
        whose text this commit did not change (a merge said before it: the keep repeats the text
        that merge replaced). Not of a text a person wrote: an edit is told by citing what the
        version it replaced cited (``edited_by_hand``), and cited anew it would no longer stand
        against what was said before it; its edit time already does (``said_before``)."""
        if op.said_at is None or fact.invalidated_at is not None or said_before(op.said_at, fact):
            return False
        if edited_by_hand(fact) is not None:
            return False
        if fact.said_at is not None and op.said_at <= fact.said_at:
            return False
        read = self.read.get(op.fact_id)
        return read is None or read.hash == fact.hash

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
        if said_before(self._said_when(op.replaced_by, replacement), fact):
            # Retired by what was said before it: the later statement stands. The earlier one,
            # new in this commit, is kept as replaced by it (unless already kept as retired); a
            # fact the add resolved to (a duplicate or a revived one) is no statement of this
            # commit's alone, and is left as it is.
            earlier = self.facts[replacement]
            if replacement == op.replaced_by and earlier.invalidated_at is None:
                self._mark_invalid(earlier, fact.fact_id)
                self.counts["invalidated"] += 1
            return
        self._mark_invalid(fact, replacement)
        self.counts["invalidated"] += 1

    def _said_when(self, add_id: str, holder: str) -> datetime | None:
        """When the statement replacing a fact was said: its add's time, or its holder's (a
        duplicate said since) when later. None when the add's is not known, which
        ``said_before`` takes as not before (as it did before adds were dated)."""
        said = self.said.get(add_id)
        if said is None:
            return None
        later = self.facts[holder].said_at
        return said if later is None else max(said, later)

    def _mark_invalid(self, fact: Fact, replaced_by: str) -> None:
        update = {"invalidated_at": self.commit.committed_at, "invalidated_by": replaced_by}
        self._put(fact.model_copy(update=update), None)
