"""A new version of a fact: its old content and provenance kept in its history (formations and
manual edits alike)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory.fact_words import denies
from memory.ids import content_hash, incarnation
from memory.models import MAX_SOURCES, Fact, FactRevision
from memory.query_words import STOP_WORDS
from memory.said import split
from memory.store.rules.text import stem, tokenize


@dataclass(frozen=True)
class Provenance:
    """Where a new version of a fact comes from (a formation; None for a manual edit)."""

    source_message_ids: tuple[str, ...] = ()
    formation_id: str | None = None
    # On the speaker's clock: the offset it holds is stored beside the instant (memory.said).
    said_at: datetime | None = None
    session_id: str | None = None  # the session the messages are in (the formation's)


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
    in history (see ``sourced_as`` for a formed version's); a manual edit keeps the sources it
    had, which said the version before (``edited_by_hand`` tells it from the history)."""
    revision = revision_of(fact, at, reason)
    sourced = {} if provenance is None else sourced_as(fact, provenance, content)
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


def revision_of(fact: Fact, at: datetime, reason: str) -> FactRevision:
    """The fact's current version as its history keeps it: text and provenance."""
    return FactRevision(
        version=fact.version,
        content=fact.content,
        changed_at=at,
        reason=reason,
        source_session_id=fact.source_session_id,
        source_message_ids=fact.source_message_ids,
        formation_id=fact.formation_id,
        said_at=fact.said_at,
        said_utc_offset_minutes=fact.said_utc_offset_minutes,
    )


def _another_incarnation(fact: Fact, provenance: Provenance) -> bool:
    """The same session id, recorded again after a forget erased it whole: its message ids name
    other messages (both formation ids tell their incarnation; older ids cannot, and count as
    the same)."""
    old, new = incarnation(fact.formation_id), incarnation(provenance.formation_id)
    return old is not None and new is not None and old != new


def _still_says(content: str, earlier: str) -> bool:
    """Whether a version's text says everything the earlier one did (each of its words but the
    function words, by stem, and denying it as that one did): a merge ("likes jazz" with "likes
    rock": "likes jazz and rock"), which the earlier version's messages said part of; not a
    correction ("code 7720" by "code 7721", "lives in Paris" by "lives in Berlin"), nor a denial
    ("lives in Paris" by "no longer lives in Paris", or back), which they contradict. The
    function words include "no" and "not": a negation is compared on its own."""

    def said(text: str) -> set[str]:
        return {stem(w) for w in tokenize(text) if w not in STOP_WORDS}

    return denies(content) == denies(earlier) and said(earlier) <= said(content)


def sourced_as(fact: Fact, provenance: Provenance, content: str) -> dict[str, object]:
    """A formed version's provenance. Formed in the session the fact's sources are in, it cites
    its own messages first, then the earlier version's when its text still says what that one
    did (``_still_says``: it is the same fact, merged), at most MAX_SOURCES. Otherwise it cites
    its own only: a correction's earlier messages said what it replaced, not what it says; and
    formed in another session, or in the same id recorded again after a forget, message ids are
    unique within a session (and incarnation) only, so the earlier ids cannot be listed under the
    new one (nor the new ones under the old). The earlier version's are kept, with their session,
    in its revision. Its said_at is then its own messages' time alone (None if not known)."""
    said_at, offset = split(provenance.said_at)
    # The said time moves with its offset: a correction said on another clock shows its own day.
    said = {"said_at": said_at, "said_utc_offset_minutes": offset}
    elsewhere = provenance.session_id != fact.source_session_id
    if (
        elsewhere
        or _another_incarnation(fact, provenance)
        or not _still_says(content, fact.content)
    ):
        return {
            "source_session_id": provenance.session_id,
            "source_message_ids": provenance.source_message_ids[:MAX_SOURCES],
            "formation_id": provenance.formation_id,
            **said,
        }
    ids = (*provenance.source_message_ids, *fact.source_message_ids)
    return {
        "source_message_ids": tuple(dict.fromkeys(ids))[:MAX_SOURCES],
        "formation_id": provenance.formation_id,
        **(said if said_at is not None else {}),
    }


LEARNT_LATE = "said before the current version, learnt later"
# A revision of the same version and text: the citation a restatement in another session took
# the place of (``cited_before``).
CITED_BEFORE = "said again in another session, cited there since"


def cited_before(fact: Fact, at: datetime) -> FactRevision:
    """The fact's citation, kept in its history when a restatement in another session (or the
    same session id recorded again) is cited in its place (rules.fact_ops): message ids name
    messages within their session only, so the two cannot be one list, and the first statement
    stays reachable. Same version and text: no new version, nothing for a decision to go stale
    on."""
    return revision_of(fact, at, CITED_BEFORE)


@dataclass(frozen=True)
class HandEdit:
    """A fact whose current text a person wrote: ``at`` the latest edit, ``said`` the revision
    of the version its sources said (the last formed one before the edits), ``replaced`` the
    content hashes of the texts the edits replaced."""

    at: datetime
    said: FactRevision
    replaced: frozenset[str] = frozenset()


def _cites(v: Fact | FactRevision) -> tuple[object, ...]:
    return (v.source_session_id, v.source_message_ids, v.formation_id, v.said_at)


def edited_by_hand(fact: Fact) -> HandEdit | None:
    """Whether the fact's current text is a person's edit (rules.manage), told by its history: an
    edit keeps the sources of the version it replaced, so that version's revision cites what the
    fact cites, while a formed version cites its own formation (``sourced_as``). A revision of a
    statement learnt late (``told_before``) records that statement, not the version: it is passed
    over. A fact citing nothing (an import) is told by ``_edited_here``. None: formed, imported
    so, or nothing to tell by."""
    cites_nothing = fact.formation_id is None and not fact.source_message_ids
    last = {r.version: r for r in fact.history}  # the last revision of each version
    edits: list[FactRevision] = []
    learnt_late = False  # after the latest edit
    for version in range(fact.version - 1, 0, -1):
        r = last.get(version)
        if r is None or (r.reason != LEARNT_LATE and _cites(r) != _cites(fact)):
            break
        if r.reason == LEARNT_LATE:
            learnt_late = learnt_late or not edits
            continue
        edits.append(r)
        if cites_nothing:
            break  # an earlier revision may be the import's own history: the latest edit only
    if not edits or (cites_nothing and not _edited_here(fact, edits[0], learnt_late)):
        return None
    replaced = frozenset(content_hash(r.content) for r in edits)
    return HandEdit(at=edits[0].changed_at, said=edits[-1], replaced=replaced)


def _edited_here(fact: Fact, edit: FactRevision, learnt_late: bool) -> bool:
    """Whether the latest revision of a fact citing nothing (an import: mem0's, Eden's) is a
    person's edit here, not a change the import brought in its history, which cites nothing
    either. An edit dates its revision and the fact alike (``rewritten``): it is the fact's
    latest write, unless statements learnt late followed it, which a fact citing nothing is told
    only over an edit (it has no said time of its own: ``said_before``). An imported history's
    last change is dated apart from the fact's update (Eden's update_history); one dated the same
    is taken for an edit, and a statement said before it does not replace the text it left
    either, as it should not."""
    return learnt_late or edit.changed_at == fact.updated_at


def said_before(said_at: datetime | None, fact: Fact) -> bool:
    """Whether a statement was said before the fact's current version was (a message recorded
    late, an older conversation imported after a newer one), or before a person last corrected
    it (a formation in flight during the edit): it must not replace it. An edit keeps the
    said_at of the version it replaced, so its own time is the edit's."""
    if said_at is None:
        return False
    if fact.said_at is not None and said_at < fact.said_at:
        return True
    edit = edited_by_hand(fact)
    return edit is not None and said_at < edit.at


def replaced_by_hand(content: str, said_at: datetime | None, fact: Fact) -> bool:
    """Whether a statement is of a text a person replaced by editing the fact, said no later
    than their latest edit: what they corrected away, formed late (a backlog, a formation in
    flight), which must not come back beside their text either (as ``said_before`` keeps it from
    replacing it). Said after the edit, it is the user telling it again; when it was said is
    not known, what was said is kept."""
    edit = edited_by_hand(fact)
    if edit is None or said_at is None or said_at > edit.at:
        return False
    return content_hash(content) in edit.replaced


def deleted_by_hand(fact: Fact) -> datetime | None:
    """When a person deleted the fact (rules.manage), or None: not deleted, or retired by a
    formation's DELETE, which names the fact that replaced it (a person's delete names none)."""
    if fact.invalidated_by is not None:
        return None
    return fact.invalidated_at


def deleted_since(said_at: datetime | None, fact: Fact) -> bool:
    """Whether a person deleted the fact after the statement was said, or it is not known when it
    was: the statement must not bring the fact back. The delete promises it is never shown
    again; a statement said before the delete (formed late: a formation in flight, a backlog,
    the cold job) is what the person deleted, and only one said after it (the fact told again)
    may undo it."""
    deleted_at = deleted_by_hand(fact)
    return deleted_at is not None and (said_at is None or said_at <= deleted_at)


def version_hashes(fact: Fact) -> frozenset[str]:
    """The content hashes of every text the fact held: its versions, and the statements of it
    learnt late (``told_before``), which its history keeps."""
    return frozenset({fact.hash, *(content_hash(r.content) for r in fact.history)})


def told_before(fact: Fact, *, content: str, at: datetime, provenance: Provenance) -> Fact:
    """The fact, its content unchanged, with an earlier statement of it learnt late kept in its
    history: the later statement stays current, and nothing said is lost."""
    said_at, offset = split(provenance.said_at)
    revision = FactRevision(
        version=fact.version,
        content=content,
        changed_at=at,
        reason=LEARNT_LATE,
        source_session_id=provenance.session_id,
        source_message_ids=provenance.source_message_ids,
        formation_id=provenance.formation_id,
        said_at=said_at,
        said_utc_offset_minutes=offset,
    )
    return fact.model_copy(
        update={"updated_at": at, "version": fact.version + 1, "history": (*fact.history, revision)}
    )
