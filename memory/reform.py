"""Re-form a degraded window (`mnemos degraded reform`): its messages are never dropped, so the
steps that fell back can run again over them, in one process, against the configured provider.
Only those: the store's records of the range say which step fell back where (reform_parts), and
a window whose facts were formed well does not have them extracted and decided again, which a
model rewording them would store twice (one re-formed for its reflections alone). A range the
model still cannot carry in one answer is split in halves, down to one message, as FormMemories
splits a window (docs/backlog.md); messages that stay unusable are reported.

The facts the fallback added unmerged are left out of the candidates, those of every window within
the range whose decisions the store recorded as fallen back (a range may span several, or be
wider than the one window): the new decisions compare the facts with what was stored before, so
an UPDATE or DELETE of an older fact converges on the flagged copy (the store's duplicate rule)
instead of keeping two contradicting facts. That rule needs the same words; a model words a fact
it extracts again otherwise, so the part's commit also supersedes the copies its new decisions
cover (memory/reform_supersede.py), in the same transaction:

- A new fact covers at most one copy: the most similar of its dedup candidates among the copies
  (above the dedup gate, so not with dedup off), drawn from one of its messages, of its scope and
  owner, still valid and unchanged since the fallback added it (version 1: a copy a person
  edited, or a later formation changed, is left as it is), each copy covered once.
- A covered copy is UPDATEd to the text the new fact's decision stored (its ADD, UPDATE or
  DELETE text; for a NONE, the fact it was judged to repeat, unless the part changes that one):
  the store finds that text valid and invalidates the copy in favour of the fact holding it. The
  decision is checked against the copy's version as any other. Where the store finds no such fact
  (the decision's statement was older than the fact it changed), the copy stays valid, as before
  the re-form, in the new words (or with them in its history).
- A copy in the very words a new decision stored is not touched: the duplicate rule makes the two
  one fact. Nor is a copy no new fact covers (a fact the extraction missed this time): it stays
  valid, as said, beside what it may contradict; nothing said is dropped on a model's omission.

The commit writes the memories and leaves the cursor where it is. The store's records of the
degraded windows (memory/degraded.py) within what was re-formed are marked so, for the steps that
ran again; a decision's only when its copies were set aside."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from memory import ids, switch_marks, transcript
from memory.degraded import (
    DECIDE_FACTS,
    EXTRACT_FACTS,
    FACT_STEPS,
    REFLECTION_STEPS,
    DegradedWindow,
    ReformPart,
    formations_of,
    reform_parts,
    undecided_within,
    unmerged_copies,
)
from memory.deps import Deps
from memory.errors import InvalidInputError, InvalidModelOutputError
from memory.group_start import FirstSeqs, as_of, first_seqs, group_since, window_end
from memory.lookup import require_agent, require_session
from memory.model_check import CheckReport, attempt
from memory.models import SessionInfo
from memory.pipeline import commit, dedup, facts, reflections
from memory.pipeline.pieces import most_facts
from memory.pipeline.types import (
    CandidatesResult,
    CommitResult,
    Decision,
    NewFact,
    NewReflection,
    Window,
)
from memory.pipeline.window import window_messages
from memory.reform_supersede import superseding as supersede
from memory.scopes import formable_scopes, single_user
from memory.switch_marks import SwitchMarks

# The records of one (agent, session) read for the windows a re-form covers, newest first; an
# older one beyond them keeps its copies among the candidates and stays listed.
_SESSION_RECORDS = 10_000


@dataclass(frozen=True)
class StillDegraded:
    """A message (or range) whose step is still unusable: (after_seq, upto_seq], and why."""

    after_seq: int
    upto_seq: int
    reason: str


@dataclass(frozen=True)
class Reformed:
    commit: CommitResult
    report: CheckReport
    still_degraded: list[StillDegraded] = field(default_factory=list)
    marked: int = 0  # degraded records marked re-formed
    steps: tuple[str, ...] = ()  # the steps run again, over some part of the range at least


def _spans(parts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Adjacent re-formed parts joined: a window re-formed in halves was re-formed whole."""
    spans: list[tuple[int, int]] = []
    for after, upto in sorted(parts):
        if spans and spans[-1][1] == after:
            spans[-1] = (spans[-1][0], upto)
        else:
            spans.append((after, upto))
    return spans


def _total(results: list[CommitResult]) -> CommitResult:
    keys = {k.key: k for r in results for k in r.due_for_consolidation}
    return CommitResult(
        already_committed=all(r.already_committed for r in results),
        facts_added=sum(r.facts_added for r in results),
        facts_updated=sum(r.facts_updated for r in results),
        facts_invalidated=sum(r.facts_invalidated for r in results),
        facts_duplicate=sum(r.facts_duplicate for r in results),
        reflections_added=sum(r.reflections_added for r in results),
        due_for_consolidation=list(keys.values()),
    )


async def reform(
    deps: Deps,
    agent_id: str,
    session_id: str,
    after_seq: int,
    upto_seq: int,
    *,
    with_reflections: bool = False,
    attempts: int = 3,
) -> Reformed:
    """Extract and decide again the facts of the windows whose fact steps fell back (and their
    reflections where that step did, when asked); a range whose step stays unusable is split in
    halves, down to one message. Raises InvalidInputError when nothing in the range is left to
    re-form, InvalidModelOutputError when not a single part could be re-formed."""
    state = await deps.store.get_session_agent_state(session_id, agent_id)
    if state is None or not 0 <= after_seq < upto_seq <= state.cursor_seq:
        raise InvalidInputError(
            f"messages {after_seq + 1}-{upto_seq} of {session_id} are not a formed range of "
            f"{agent_id} (cursor {state.cursor_seq if state else 'none'})"
        )
    agent = await require_agent(deps.store, agent_id)
    session = await require_session(deps.store, session_id)
    first = await first_seqs(deps.store, session)
    records = await _records_within(deps, agent_id, session_id, after_seq, upto_seq)
    todo = _cut(
        reform_parts(records, after_seq, upto_seq, with_reflections),
        session,
        first,
        state.switch_marks,
    )
    if not todo:
        raise InvalidInputError(_nothing_left(records, session_id, after_seq, upto_seq))
    undecided = undecided_within(records, after_seq, upto_seq)
    # The range's own window: named without the session's incarnation by older code (a window
    # degraded before its commit kept a record), with it since.
    unmarked = ids.formation_id(session_id, agent_id, after_seq, upto_seq)
    original = ids.formation_id(session_id, agent_id, after_seq, upto_seq, session.created_at)
    # The facts the decide fallbacks added unmerged, left out of the candidates: those of each
    # window within whose decisions the store recorded as fallen back; the range's own window's
    # on trust only when the store holds no record within the range (degraded before it kept
    # them). Not a window recorded for another step: its decisions went well, its facts stay
    # candidates (left out, the same facts formed again would be added a second time).
    per = deps.settings.facts.max_per_formation
    own = dict.fromkeys((unmarked, original), upto_seq - after_seq)
    flagged = unmerged_copies(_bounds(formations_of(undecided) | ({} if records else own), per))
    # What a part forming its reflections alone shows the model as newly formed: the facts these
    # formations added from its messages (FormMemories showed it the window's new facts).
    formations = _bounds(own | formations_of(records), per)
    # The users' erasure epochs now: a commit checks them (a user forgotten once is at 1, and a
    # window without them would be discarded as if formed before that erasure).
    epochs = await deps.store.erasure_epochs(agent_id, session.user_ids)
    report = CheckReport()
    done: list[CommitResult] = []
    formed: list[ReformPart] = []
    still: list[StillDegraded] = []
    while todo:
        p = todo.pop(0)
        part = (
            ""
            if (p.after_seq, p.upto_seq) == (after_seq, upto_seq)
            else f":{p.after_seq}-{p.upto_seq}"
        )
        # As a formation window sees it: the scopes of who had spoken by its last message.
        seen = as_of(session, first, p.upto_seq)
        recorded_under = switch_marks.as_recorded(agent, state, p.upto_seq)
        fact_scopes, reflection_scopes = formable_scopes(recorded_under, seen)
        w = Window(
            formation_id=f"{original}:reform:{state.formations}{part}",
            session_id=session_id,
            agent_id=agent_id,
            user_id=single_user(seen),
            after_seq=p.after_seq,
            upto_seq=p.upto_seq,
            message_count=p.upto_seq - p.after_seq,
            fact_scopes=fact_scopes,
            reflection_scopes=reflection_scopes,
            user_epochs=epochs,
            agent=agent,
            group=seen.is_group,  # a private detail of no one's is dropped where one told it
            slice_cut=transcript.CUT_RULE,  # read now, as a window planned now
        )
        try:
            done.append(
                await _reform_window(
                    deps, w, p, flagged, formations, report, attempts, state.cursor_seq
                )
            )
            if not done[-1].discarded_for_erasure:  # a user forgotten meanwhile: nothing written
                formed.append(p)
        except InvalidModelOutputError as e:
            if p.upto_seq - p.after_seq > 1:
                middle = p.after_seq + (p.upto_seq - p.after_seq) // 2
                todo[:0] = [replace(p, upto_seq=middle), replace(p, after_seq=middle)]
            else:
                still.append(StillDegraded(p.after_seq, p.upto_seq, str(e)))
    if not done:
        raise InvalidModelOutputError(f"{still[0].reason} (messages {after_seq + 1}-{upto_seq})")
    marked, now = 0, datetime.now(UTC)
    for after, upto in _spans([(p.after_seq, p.upto_seq) for p in formed if p.facts]):
        marked += await deps.store.mark_reformed(
            agent_id, session_id, after, upto, steps=(EXTRACT_FACTS,), at=now
        )
        # The decisions' records one by one: those whose copies were set aside, not any other
        # the range holds (one older than the records _records_within read).
        for r in undecided_within(undecided, after, upto):
            marked += await deps.store.mark_reformed(
                agent_id, session_id, r.after_seq, r.upto_seq, steps=(DECIDE_FACTS,), at=now
            )
    for after, upto in _spans([(p.after_seq, p.upto_seq) for p in formed if p.reflections]):
        marked += await deps.store.mark_reformed(
            agent_id, session_id, after, upto, steps=REFLECTION_STEPS, at=now
        )
    ran = {s for p in formed for s in p.steps}
    return Reformed(
        commit=_total(done),
        report=report,
        still_degraded=still,
        marked=marked,
        steps=tuple(s for s in (*FACT_STEPS, *REFLECTION_STEPS) if s in ran),
    )


def _cut(
    parts: list[ReformPart], session: SessionInfo, first: FirstSeqs, marks: SwitchMarks
) -> list[ReformPart]:
    """The parts, each one that spans the moment the session became a group or a change of the
    agent's memory switches cut there, as a formation window is (memory/group_start.py,
    memory/switch_marks.py): what was said alone is re-formed alone, what was said under some
    switches under them."""
    since = group_since(session, first)
    cut: list[ReformPart] = []
    todo = list(parts)
    while todo:
        p = todo.pop(0)
        end = switch_marks.window_end(
            p.after_seq, window_end(p.after_seq, p.upto_seq, since), marks
        )
        if end == p.upto_seq:
            cut.append(p)
        else:
            cut.append(replace(p, upto_seq=end))
            todo.insert(0, replace(p, after_seq=end))
    return cut


async def _records_within(
    deps: Deps, agent_id: str, session_id: str, after_seq: int, upto_seq: int
) -> list[DegradedWindow]:
    """The store's records of the windows within the range, re-formed ones too (a decision's
    copies are the flagged ones an earlier re-form converged on: still not candidates)."""
    records = await deps.store.list_degraded(
        agent_id=agent_id, session_id=session_id, include_reformed=True, limit=_SESSION_RECORDS
    )
    return [r for r in records if after_seq <= r.after_seq and r.upto_seq <= upto_seq]


def _nothing_left(records: list[DegradedWindow], session_id: str, after: int, upto: int) -> str:
    left = {r.step for r in records if r.reformed_at is None}
    why = (
        "its reflection step fell back: re-form it with --reflections"
        if left
        else "the store's records of it are all re-formed (`mnemos degraded list --all`)"
    )
    return f"nothing to re-form in messages {after + 1}-{upto} of {session_id}: {why}"


async def _reform_window(
    deps: Deps,
    w: Window,
    p: ReformPart,
    flagged: set[str],
    formations: dict[str, int],
    report: CheckReport,
    attempts: int,
    keep_cursor: int,
) -> CommitResult:
    new: list[NewFact] = []
    decisions: list[Decision] = []
    superseding: dict[int, Decision] = {}
    if p.facts:
        new, decisions, superseding = await _facts(deps, w, flagged, report, attempts)
    formed_reflections: list[NewReflection] = []
    if p.reflections:
        texts = (
            [d.final_text for d in decisions if d.final_text and d.event != "NONE"]
            if p.facts
            else await _stored_facts(deps, w, formations)
        )
        reflected, why = await attempt(
            report.steps["extract_reflections"],
            lambda r: reflections.extract_reflections(deps, w, texts, r),
            attempts,
        )
        if reflected is None:
            raise InvalidModelOutputError(f"still degraded: extract_reflections: {why}")
        formed_reflections = reflected.reflections
    # Each copy's UPDATE right after its new fact's decision: the text it converges on is then the
    # one that decision stored, before a later decision of the part changes that fact again.
    ops: list[Decision] = []
    for d in decisions:
        ops += [d, superseding[d.new_index]] if d.new_index in superseding else [d]
    return await commit.commit(
        deps, w, new, ops, formed_reflections, datetime.now(UTC), keep_cursor=keep_cursor
    )


async def _facts(
    deps: Deps, w: Window, flagged: set[str], report: CheckReport, attempts: int
) -> tuple[list[NewFact], list[Decision], dict[int, Decision]]:
    """The part's new facts, their decisions, and the UPDATEs superseding the copies they cover
    (by new fact index)."""
    extracted, why = await attempt(
        report.steps["extract_facts"], lambda r: facts.extract_facts(deps, w, r), attempts
    )
    if extracted is None:
        raise InvalidModelOutputError(f"still degraded: extract_facts: {why}")
    new = extracted.facts
    found = await facts.find_candidates(deps, w, new)
    candidates = CandidatesResult(
        by_new_index={
            i: kept
            for i, cands in found.by_new_index.items()
            if (kept := [c for c in cands if c.fact_id not in flagged])
        }
    )
    decided, why = await attempt(
        report.steps["decide_facts"], lambda r: dedup.decide(deps, w, new, candidates, r), attempts
    )
    if decided is None:
        raise InvalidModelOutputError(f"still degraded: decide_facts: {why}")
    return new, decided.decisions, await supersede(deps, w, new, decided.decisions, found, flagged)


def _bounds(windows: dict[str, int], per_formation: int) -> dict[str, int]:
    """Each formation's most new facts, by the messages of its window (pieces.most_facts)."""
    return {f: most_facts(messages, per_formation) for f, messages in windows.items()}


async def _stored_facts(deps: Deps, w: Window, formations: dict[str, int]) -> list[str]:
    """The still valid facts these formations added from the window's messages (those it updated
    keep an older fact's id: not found here). Every index up to each formation's bound is asked:
    a dense window's decisions may have stored none of its first facts under their own ids."""
    said = {m.message_id for m in await window_messages(deps, w)}
    wanted = sorted(unmerged_copies(formations))
    stored = await deps.store.get_facts(wanted)  # one snapshot; the store splits a long id list
    return [
        f.content
        for f in stored
        if f.invalidated_at is None and said.intersection(f.source_message_ids)
    ]
