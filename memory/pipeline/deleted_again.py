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
"""

from __future__ import annotations

from datetime import datetime

from memory.deps import Deps
from memory.ids import content_hash
from memory.llm import choose_model
from memory.llm.fact_overlap import may_restate
from memory.models import Fact
from memory.pipeline.restatements import ask_same_fact
from memory.pipeline.types import Decision, LlmCall, NewFact, Window
from memory.pipeline.window import window_agent
from memory.store.rules.versions import deleted_since

DELETED_AGAIN = "deleted by hand, said before the delete:"  # a dropped add's reasoning


async def not_deleted_again(
    deps: Deps, window: Window, facts: list[NewFact], decisions: list[Decision]
) -> tuple[list[Decision], list[LlmCall]]:
    """The decisions, each ADD of a statement of a fact a person deleted after it was said made a
    NONE that stores nothing; and the calls that took."""
    said = {f.index: f for f in facts if f.said_at is not None}
    adds = [said[d.new_index] for d in decisions if d.event == "ADD" and d.new_index in said]
    if not adds:
        return decisions, []
    since = min(_said(f) for f in adds)
    owners = sorted({_owner(window, f) or "" for f in adds})
    deleted = await deps.store.hand_deleted_since(window.agent_id, since, owners)
    asks = {f.index: pair for f in adds if (pair := _restated(window, f, deleted)) is not None}
    if not asks:
        return decisions, []
    agent = await window_agent(deps, window)
    model = choose_model(deps.settings, deps.llm.name, "fast", agent.tier)
    out: list[Decision] = []
    calls: list[LlmCall] = []
    ended = False  # a provider failed: the adds left are kept
    for decision in decisions:
        pair = None if ended or decision.event != "ADD" else asks.get(decision.new_index)
        if pair is None:
            out.append(decision)
            continue
        fact, text = pair
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


def _owner(window: Window, fact: NewFact) -> str | None:
    """The user the fact would be stored for (pipeline/commit.py fact_ops)."""
    return window.user_id if fact.scope == "user" else None


def _restated(window: Window, new: NewFact, deleted: list[Fact]) -> tuple[Fact, str] | None:
    """The deleted fact of the new fact's owner, deleted after it was said, and its version's
    text the new fact may state again in other words: the first found. A text the fact held is
    the commit's to drop (it compares hashes), with no question asked."""
    hash_ = content_hash(new.content)
    for fact in deleted:
        if fact.scope != new.scope or fact.user_id != _owner(window, new):
            continue
        if not deleted_since(new.said_at, fact):
            continue
        texts = [fact.content, *(r.content for r in reversed(fact.history))]
        if any(content_hash(t) == hash_ for t in texts):
            return None
        for text in texts:
            if may_restate(new.content, text):
                return fact, text
    return None
