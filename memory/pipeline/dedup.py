"""Step 5: one batched ADD / UPDATE / DELETE / NONE decision for the facts that have similar ones,
and a yes/no second look at a kept fact that may state a stored one again (restatements.py).

Existing facts are shown to the model by short indices, never by id, and every index it returns is
checked: an UPDATE, DELETE or NONE naming no fact, or a fact that was not offered as that new fact's
candidate, changes nothing, and the new fact is ADDed (never guessed, nor retried: the model
answered the same way again). An answer deciding a new fact twice, not at all or one not asked
about is rejected and retried; a grammar-enforcing server cannot emit one
(memory/llm/decision_schema.py). A well-formed UPDATE, DELETE or NONE of a fact that says nothing in common
with the new one, or a change that names neither the stored fact's attribute nor its verb
(memory/llm/fact_overlap.py), is refused: the new fact is ADDed, the other left as it was. So is
an UPDATE or DELETE of one named person's fact by another's ("Bob's locker code" for "Alice's":
``another_owner``), or a value of one thing by another's ("paid 80 dollars for the museum
tickets" for "… for the concert tickets": ``another_thing``), and a NONE of a fact that lacks what the new one says (a number, code or name,
a denial, a tense, another value word: ``another_value``; "Alice's phone number is 555-9999"
is no repeat of "… 555-1234"). Where the rules can see that two facts say different things, a
model's word alone neither replaces one with the other nor drops one as the other's duplicate.
An UPDATE's merged text that lacks a number, code or name of the new fact, or adds one neither
fact says (``merge_loses``), is not stored: the UPDATE stands with the new fact's own text. And a
user's fact never UPDATEs or DELETEs a fact in agent scope (memory/scopes.py ``may_change``),
which every user reads; it is ADDed as theirs, by the model's decision or by rule. Nor does a
merge write a person's detail there: an UPDATE of an agent fact whose merged text tells a private
detail or is about its speaker (memory/scopes.py ``personal_merge``, the rules extracted items
are placed by) stands with the new fact's own text, as one that loses a value does (a new fact in
agent scope is one formation cleared for it): one fact, never two copies of it.

An ADD of a fact a person deleted after it was said, in other words than the fact held, stores
nothing when the model, asked that pair, says it is the same fact; an ADD of a text a person
replaced by editing a candidate, said before the edit, is a NONE of that fact (deleted_again.py).

The step also embeds the texts its decisions store (ADD texts, UPDATE merges) through the
content-addressed cache: the commit only reads those vectors, so the store write never waits on the
remote embedder.
"""

from __future__ import annotations

import re

from memory.deps import Deps
from memory.errors import InvalidModelOutputError
from memory.llm import choose_model
from memory.llm.base import FIRST, LLMRequest, Retry
from memory.llm.fact_overlap import (
    another_owner,
    another_thing,
    another_value,
    keeps_the_thing,
    merge_loses,
    nothing_in_common,
)
from memory.models import FactScope
from memory.pipeline.decision_order import in_message_order, said_back, through_window
from memory.pipeline.deleted_again import not_deleted_again, not_replaced_again
from memory.pipeline.embed_cache import embed_cached
from memory.pipeline.predecide import REFUSED, predecide
from memory.pipeline.restatements import second_look
from memory.pipeline.types import (
    DEGRADED,
    CandidatesResult,
    Decision,
    DecisionsResult,
    LlmCall,
    NewFact,
    SimilarFact,
    Window,
)
from memory.pipeline.usage import llm_call, words
from memory.pipeline.window import window_agent
from memory.prompts.common import MAX_ITEMS
from memory.prompts.decide_facts import (
    DecideFactsInput,
    ExistingFactShown,
    FactDecision,
    FactDecisions,
    NewFactShown,
)
from memory.scopes import may_change, personal_merge

_NOT_SHARED = "a user's fact never changes the agent's memory, which every user reads"
# A model that overshoots the word limit a little still wrote a usable text; far beyond, it looped.
_WORD_SLACK = 1.25
# What a merged text must not carry: the prompt's list numbering, tags and candidate notes.
_ECHO = re.compile(
    r"\(candidate|candidate for new|new facts?\s+\d|existing memor|existing\s+\d|</?[a-z_]+>",
    re.IGNORECASE,
)


def stored_texts(facts: list[NewFact], decisions: list[Decision]) -> list[str]:
    """The texts the decisions store, each needing a vector: ADD/DELETE texts and UPDATE merges."""
    by_index = {f.index: f for f in facts}
    return [d.final_text or by_index[d.new_index].content for d in decisions if d.event != "NONE"]


def _existing_index(candidates: CandidatesResult) -> list[SimilarFact]:
    """Each existing fact once, in first-seen order: the indices the prompt shows."""
    seen: dict[str, SimilarFact] = {}
    for new_index in sorted(candidates.by_new_index):
        for cand in candidates.by_new_index[new_index]:
            seen.setdefault(cand.fact_id, cand)
    return list(seen.values())


async def decide(
    deps: Deps,
    window: Window,
    facts: list[NewFact],
    candidates: CandidatesResult,
    retry: Retry = FIRST,
) -> DecisionsResult:
    """Decide, then embed the texts to store (one embedding call at most, none when cached)."""
    decisions, llm = await _decide(deps, window, facts, candidates, retry)
    decisions = await not_replaced_again(deps, facts, candidates, decisions)
    decisions, asked = await not_deleted_again(deps, window, facts, decisions)
    stored = {c.fact_id: c.content for found in candidates.by_new_index.values() for c in found}
    ordered = said_back(window, through_window(window, decisions), facts, stored)
    # A later statement naming an add just dropped is an ADD now: looked at in its turn.
    made_adds = {d.new_index for d, was in zip(ordered, decisions, strict=True) if d != was}
    ordered = await not_replaced_again(deps, facts, candidates, ordered, only=made_adds)
    decisions, again = await not_deleted_again(deps, window, facts, ordered, only=made_adds)
    asked += again
    _, calls = await embed_cached(deps.store, deps.embedder, stored_texts(facts, decisions))
    return DecisionsResult(decisions=decisions, llm=llm + asked, embedding_calls=calls)


async def undecided(deps: Deps, facts: list[NewFact], reason: str) -> DecisionsResult:
    """The fallback when the model's decisions stay invalid after every retry: each new fact is
    added as said, unmerged, flagged with the reason (the store's exact-duplicate rule still
    holds). Nothing waits on a decision the model cannot make."""
    decisions = [
        Decision(
            new_index=f.index, event="ADD", final_text=f.content, reasoning=f"{DEGRADED}: {reason}"
        )
        for f in facts
    ]
    _, calls = await embed_cached(deps.store, deps.embedder, stored_texts(facts, decisions))
    return DecisionsResult(decisions=decisions, embedding_calls=calls)


async def _decide(
    deps: Deps,
    window: Window,
    facts: list[NewFact],
    candidates: CandidatesResult,
    retry: Retry,
) -> tuple[list[Decision], list[LlmCall]]:
    """What needs no model is decided by rule (predecide.py); the others by the model, one call
    per MAX_ITEMS of them (the answer's bound; more only for a dense message read in pieces,
    memory/pipeline/pieces.py), every chunk's decisions then ordered together."""
    decisions, asked = predecide(facts, candidates)
    decisions = await _within_scope(deps, facts, decisions)
    if not asked:
        return decisions, []
    contested = [f for f in facts if f.index in asked]
    agent = await window_agent(deps, window)
    model = choose_model(deps.settings, deps.llm.name, "fast", agent.tier)
    calls: list[LlmCall] = []
    looked: list[Decision] = []
    for start in range(0, len(contested), MAX_ITEMS):
        chunk = contested[start : start + MAX_ITEMS]
        mine = {f.index: asked[f.index] for f in chunk}
        decided, made = await _ask(deps, model, chunk, mine, candidates, retry)
        looked += decided
        calls += made
    decisions += in_message_order(sorted(looked, key=lambda d: d.new_index))
    return sorted(decisions, key=lambda d: d.new_index), calls


async def _ask(
    deps: Deps,
    model: str,
    contested: list[NewFact],
    asked: dict[int, list[SimilarFact]],
    candidates: CandidatesResult,
    retry: Retry,
) -> tuple[list[Decision], list[LlmCall]]:
    """One decision call: the model sees the facts it decides with the candidates left to them,
    no others; then the second look (restatements.py)."""
    existing = _existing_index(candidates.model_copy(update={"by_new_index": asked}))
    position = {c.fact_id: i for i, c in enumerate(existing)}
    offered = {f.index: {position[c.fact_id] for c in asked[f.index]} for f in contested}
    shown = [
        ExistingFactShown(
            index=i,
            content=c.content,
            candidate_for=tuple(sorted(n for n, idx in offered.items() if i in idx)),
        )
        for i, c in enumerate(existing)
    ]
    request = LLMRequest.of(
        DecideFactsInput(
            new_facts=[
                NewFactShown(index=f.index, content=f.content, scope=f.scope) for f in contested
            ],
            existing=shown,
            max_words=deps.settings.facts.max_words,
        ),
        model=model,
        temperature=deps.settings.models.temperature,
        retry=retry,
    )
    result = await deps.llm.generate_structured(request, FactDecisions)
    resolved = resolve(
        result.value.decisions,
        contested,
        existing,
        offered,
        max_words=deps.settings.facts.max_words,
        ordered=False,
        agent_facts=await _agent_facts(deps, contested, existing, result.value.decisions),
    )
    looked, again = await second_look(deps.llm, request.model, resolved, contested, asked)
    return looked, [llm_call(request, result.usage), *again]


def resolve(
    raw: list[FactDecision],
    contested: list[NewFact],
    existing: list[SimilarFact],
    offered: dict[int, set[int]],
    *,
    max_words: int = 30,
    ordered: bool = True,
    agent_facts: frozenset[str] = frozenset(),
) -> list[Decision]:
    """Validate the model's decisions and map indices back to fact ids; ``ordered``, put them in
    message order (``in_message_order``), else by new fact index (the caller orders them when it
    has looked at them again). ``agent_facts``: the ids of the existing facts in agent scope,
    which a user's fact may not change (scopes.may_change) and no personal merge may reword
    (scopes.personal_merge). Raises InvalidModelOutputError."""
    by_index = {f.index: f for f in contested}
    out: dict[int, Decision] = {}
    for d in raw:
        fact = by_index.get(d.new_fact_index)
        if fact is None:
            raise InvalidModelOutputError(f"decision for unknown new fact index {d.new_fact_index}")
        if d.new_fact_index in out:
            raise InvalidModelOutputError(f"two decisions for new fact {d.new_fact_index}")
        if d.event == "ADD":
            out[fact.index] = Decision(new_index=fact.index, event="ADD", final_text=fact.content)
            continue
        index = d.existing_index
        if index is None or index not in offered[fact.index]:
            # The model named nothing this new fact may change: nothing changes, it is kept.
            # Retried, the 1.5B model answered the same way, and the fallback then added the
            # whole batch undecided (decision_schema.py says why no grammar forces an index).
            out[fact.index] = _kept(fact, f"{d.event}: {_unchangeable(index)}")
            continue
        target = existing[index]
        stored_scope: FactScope = "agent" if target.fact_id in agent_facts else "user"
        if d.event != "NONE" and not may_change(fact.scope, stored_scope):
            # Not retried: the model may be right that they meet; whose memory changes is the
            # rules' to say.
            out[fact.index] = _kept(fact, f"{d.event} of {target.fact_id}: {_NOT_SHARED}")
            continue
        if why := _refusal(d.event, fact.content, target.content, d.merged_text):
            # Not rejected for a retry: the answer is well formed, and a model that read the
            # two facts as one would read them so again. The new fact is kept beside the other.
            out[fact.index] = _kept(fact, f"{d.event} of {target.fact_id}: {why}")
            continue
        text = None
        if d.event == "UPDATE":
            text = _merged(d.merged_text, fact, max_words) if d.merged_text else fact.content
            if merge_loses(fact.content, target.content, text) or (
                stored_scope == "agent" and personal_merge(text)
            ):
                # Not retried either: the model's UPDATE stands; only its wording is set aside.
                # A personal merge too: the model may be right that they are one fact, its words
                # are no agent memory, and the new fact's own are (formation placed it there).
                # Added beside the old one instead, the one fact would be held twice.
                text = fact.content
        elif d.event == "DELETE":
            text = fact.content
        out[fact.index] = Decision(
            new_index=fact.index,
            event=d.event,
            existing_id=target.fact_id,
            expected_version=target.version,
            final_text=text,
        )
    missing = sorted(set(by_index) - set(out))
    if missing:
        raise InvalidModelOutputError(f"no decision for new facts {missing}")
    decisions = [out[i] for i in sorted(out)]
    return in_message_order(decisions) if ordered else decisions


def _personal_merge(decision: FactDecision) -> bool:
    """Whether ``decision`` is an UPDATE whose merged text is no agent memory."""
    return (
        decision.event == "UPDATE"
        and decision.merged_text is not None
        and personal_merge(decision.merged_text)
    )


async def _agent_facts(
    deps: Deps,
    contested: list[NewFact],
    existing: list[SimilarFact],
    raw: list[FactDecision],
) -> frozenset[str]:
    """The ids of the shown facts in agent scope, read only when a user's fact is among those
    decided or a merged text is personal (a fact's scope never changes, so reading it before
    the commit is safe)."""
    if not existing:
        return frozenset()
    if all(f.scope != "user" for f in contested) and not any(map(_personal_merge, raw)):
        return frozenset()
    stored = await deps.store.get_facts([c.fact_id for c in existing])
    return frozenset(f.fact_id for f in stored if f.scope == "agent")


async def _within_scope(
    deps: Deps, facts: list[NewFact], decided: list[Decision]
) -> list[Decision]:
    """The rules' decisions, each UPDATE a user's fact may not make (of an agent fact: a code in
    another case, predecide.CODE_CASE) made an ADD of the user's fact, as a model's would be."""
    by_index = {f.index: f for f in facts}
    users = [d for d in decided if d.event == "UPDATE" and by_index[d.new_index].scope == "user"]
    if not users:
        return decided
    stored = await deps.store.get_facts([d.existing_id for d in users if d.existing_id])
    agents = {f.fact_id for f in stored if f.scope == "agent"}
    shared = {d.new_index for d in users if d.existing_id in agents}
    return [
        Decision(
            new_index=d.new_index,
            event="ADD",
            final_text=by_index[d.new_index].content,
            reasoning=f"{d.reasoning}, not changed: {_NOT_SHARED}",
        )
        if d.new_index in shared
        else d
        for d in decided
    ]


def _kept(fact: NewFact, refusal: str) -> Decision:
    """The new fact ADDed as said, the model's change refused (``refusal``: which, and why)."""
    return Decision(
        new_index=fact.index,
        event="ADD",
        final_text=fact.content,
        reasoning=f"{REFUSED} {refusal}",
    )


def _unchangeable(existing_index: int | None) -> str:
    """Why a change may not touch the fact the model named (none, or one not offered)."""
    if existing_index is None:
        return "it names no stored fact"
    return f"existing index {existing_index} is not a candidate of this new fact"


def _refusal(event: str, new: str, stored: str, merged: str | None = None) -> str | None:
    """Why the rules refuse a model's UPDATE, DELETE or NONE of ``stored`` by ``new``, if they do."""
    if nothing_in_common(new, stored, numbers=event == "NONE"):
        return "nothing in common"
    if event != "NONE" and not keeps_the_thing(new, stored):
        return "names neither its attribute nor its verb"
    if event != "NONE" and (why := another_owner(new, stored) or another_thing(new, stored)):
        # Another person's fact, or a value of another thing ("paid 80 dollars for the museum
        # tickets" for "… 120 dollars for the concert tickets"): two facts, neither replaced.
        return why
    if event == "NONE" and (why := another_value(new, stored)):
        # A NONE drops the new fact as already stored: "Alice's phone number is 555-9999" for
        # "… 555-1234" would keep the old number and lose the correction.
        return why
    if event == "UPDATE" and merged and nothing_in_common(new, merged, numbers=True):
        # The 1.5B model "merged" the text of a fact it was shown but not offered ("Jon plans to
        # perform at a nearby festival" for "Jon is looking for the right type of flooring"):
        # a merge that says nothing the new fact says is another fact's, read by mistake.
        return "its merged text says nothing the new fact says"
    return None


def _merged(text: str, fact: NewFact, max_words: int) -> str:
    """A merged text, checked: one short sentence, nothing copied from the prompt's lists."""
    merged = " ".join(text.split())
    if not merged:
        return fact.content
    # A merge may say what the new fact says, which formation keeps whatever its length: the
    # bound is the longer of the two, with the slack.
    limit = max(max_words, words(fact.content))
    if words(merged) > limit * _WORD_SLACK:
        raise InvalidModelOutputError(
            f"merged_text of new fact {fact.index} has {words(merged)} words, "
            f"over the limit of {limit}"
        )
    if _ECHO.search(merged):
        raise InvalidModelOutputError(
            f"merged_text of new fact {fact.index} copies the prompt's lists: "
            f"write only the merged fact, or null"
        )
    return merged
