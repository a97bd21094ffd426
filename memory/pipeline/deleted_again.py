"""A fact a person deleted, stated again in other words by what was said before the delete, is not
brought back.

A formation that reads messages said before a person deleted a fact (a backlog, the cold job, a
formation in flight) may find that fact in them. The commit drops an add whose text the deleted
fact held in any version (memory/store/rules/fact_ops.py); one in other words ("Alice lives at 12
Rue de Rivoli" for the deleted "Alice's home address is 12 Rue de Rivoli") would be added, and the
agent shown again what the person deleted. A similar statement may be a distinct fact ("allergic
to penicillin" beside the deleted "… peanuts"), so similarity never decides: where the rules see
that the add may state a version of the deleted fact again (fact_overlap.may_restate: the same
numbers and names, nothing added, nothing denied), the model is asked that one pair, the second
looks' same_fact question (restatements.py), and only its yes drops the add. An answer that
cannot be read, a refusal or a provider failure keeps the add, as the second looks keep a
decision: what the user said is not lost to a failure, and the person can delete it again.

Said after the delete, the fact told again comes back, as the commit lets it.

A fact a person corrected by hand holds the same promise: what was said before the edit does not
undo it. The commit keeps a late UPDATE back to the replaced text from replacing theirs
(versions.said_before); an ADD of that very text, a model's, or its NONE of the edited fact
refused as naming another value (dedup ``another_value``: "Rex" is no value of "… is called
Max"), would store it as a new fact beside the edit. Such an add, of a text an edit replaced in a
candidate, said no later than the edit, is a NONE of the edited fact (``not_replaced_again``).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from memory.deps import Deps
from memory.ids import content_hash
from memory.llm import choose_model
from memory.llm.fact_overlap import may_restate, restatement_keys
from memory.models import Fact
from memory.pipeline.predecide import RULE
from memory.pipeline.restatements import ask_same_fact
from memory.pipeline.types import CandidatesResult, Decision, LlmCall, NewFact, Window
from memory.pipeline.window import window_agent
from memory.store.rules.versions import deleted_since, replaced_by_hand

DELETED_AGAIN = "deleted by hand, said before the delete:"  # a dropped add's reasoning
EDITED_AGAIN = f"{RULE}: replaced by hand, said before the edit:"  # an add made a NONE


async def not_replaced_again(
    deps: Deps,
    facts: list[NewFact],
    candidates: CandidatesResult,
    decisions: list[Decision],
    only: Collection[int] | None = None,
) -> list[Decision]:
    """The decisions, each ADD of a text a person replaced by editing one of its candidates,
    said no later than the edit (versions.replaced_by_hand), made a NONE of that fact: nothing
    is written while it is the version read (pipeline/commit.py). ``only``: as in
    ``not_deleted_again``. Only a candidate past its first version can have been edited: most
    windows read nothing more."""
    said = {f.index: f for f in facts}
    offered = {
        d.new_index: [
            c.fact_id for c in candidates.by_new_index.get(d.new_index, ()) if c.version > 1
        ]
        for d in decisions
        if d.event == "ADD" and (only is None or d.new_index in only)
    }
    wanted = sorted({fact_id for ids in offered.values() for fact_id in ids})
    if not wanted:
        return decisions
    stored = {f.fact_id: f for f in await deps.store.get_facts(wanted) if f.invalidated_at is None}
    out: list[Decision] = []
    for decision in decisions:
        ids = offered.get(decision.new_index, [])
        edited = _replaced_in(said[decision.new_index], [stored[i] for i in ids if i in stored])
        out.append(
            decision
            if edited is None
            else Decision(
                new_index=decision.new_index,
                event="NONE",
                existing_id=edited.fact_id,
                expected_version=edited.version,
                reasoning=f"{EDITED_AGAIN} {edited.fact_id}",
            )
        )
    return out


def _replaced_in(new: NewFact, candidates: list[Fact]) -> Fact | None:
    """The first candidate a person edited after ``new`` was said whose edit replaced its text."""
    return next((f for f in candidates if replaced_by_hand(new.content, new.said_at, f)), None)


async def not_deleted_again(
    deps: Deps,
    window: Window,
    facts: list[NewFact],
    decisions: list[Decision],
    only: Collection[int] | None = None,
) -> tuple[list[Decision], list[LlmCall]]:
    """The decisions, each ADD of a statement of a fact a person deleted after it was said made a
    NONE that stores nothing; and the calls that took. ``only``: the new facts to look at (those
    another rule made ADDs since the first look: ``dedup.decide``)."""
    said = {f.index: f for f in facts if f.said_at is not None}
    adds = [
        said[d.new_index]
        for d in decisions
        if d.event == "ADD" and d.new_index in said and (only is None or d.new_index in only)
    ]
    if not adds:
        return decisions, []
    since = min(_said(f) for f in adds)
    # What the speaker's facts may restate: the agent's, and the window's user's (a model files
    # one statement in either scope: the dedup filter reads both too).
    owners = sorted({"", *([window.user_id] if window.user_id else [])})
    deleted = _Deleted(await deps.store.hand_deleted_since(window.agent_id, since, owners))
    found = {
        f.index: hit
        for f in adds
        if (hit := deleted.restated(f, window.user_id if f.scope == "user" else None)) is not None
    }
    if not found:
        return decisions, []
    agent = await window_agent(deps, window)
    model = choose_model(deps.settings, deps.llm.name, "fast", agent.tier)
    out: list[Decision] = []
    calls: list[LlmCall] = []
    ended = False  # a provider failed: the adds left are kept
    for decision in decisions:
        hit = None if ended or decision.event != "ADD" else found.get(decision.new_index)
        if hit is None:
            out.append(decision)
            continue
        fact, text = hit
        same = text is None  # its very words: the same fact, no question to ask
        if text is not None:
            same, call, ended = await ask_same_fact(
                deps.llm, model, text, said[decision.new_index].content
            )
            calls += [call] if call is not None else []
        out.append(
            Decision(
                new_index=decision.new_index,
                event="NONE",  # naming no fact: nothing is written (pipeline/commit.py)
                reasoning=f"{DELETED_AGAIN} {fact.fact_id}",
            )
            if same
            else decision
        )
    return out, calls


def _said(fact: NewFact) -> datetime:
    assert fact.said_at is not None  # filtered above
    return fact.said_at


class _Deleted:
    """The hand-deleted facts, looked up by the numbers and names of their versions (a restatement
    holds them all: ``restatement_keys``): each new fact is compared with the few holding its
    rarest one, not with every fact a person ever deleted (10,000: 20 s, on the event loop)."""

    def __init__(self, facts: list[Fact]) -> None:
        self.by_key: dict[str, list[tuple[Fact, str]]] = {}
        self.hashes: dict[str, Fact] = {}
        for fact in facts:
            for text in (fact.content, *(r.content for r in reversed(fact.history))):
                self.hashes.setdefault(content_hash(text), fact)
                for key in restatement_keys(text):
                    self.by_key.setdefault(key, []).append((fact, text))

    def restated(self, new: NewFact, owner: str | None) -> tuple[Fact, str | None] | None:
        """The deleted fact, deleted after ``new`` was said, that it states: in one of its
        versions' words (text None), or maybe in other words (the version's text, to ask). Its
        words in its own scope are the commit's to drop (rules/fact_ops.py, counted there)."""
        same = self.hashes.get(content_hash(new.content))
        if same is not None and deleted_since(new.said_at, same):
            mine = same.scope == new.scope and same.user_id == owner
            return None if mine else (same, None)
        keys = restatement_keys(new.content)
        if not keys or any(key not in self.by_key for key in keys):
            return None
        for fact, text in min((self.by_key[key] for key in keys), key=len):
            if deleted_since(new.said_at, fact) and may_restate(new.content, text):
                return fact, text
        return None
