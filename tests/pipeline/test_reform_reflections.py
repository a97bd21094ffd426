"""`mnemos degraded reform --reflections` of a window whose facts were formed well: only its
reflection step fell back (the single message passed over). A real model never words a fact the
same way twice; re-forming the window's reflections must not store its facts a second time,
reworded. Each step runs again only where the store recorded it as fallen back. Offline provider
that rewords a message extracted again, real SQLite store (the degraded records written as the
formation's commit writes them, tests/store/test_contract_degraded.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from pydantic import BaseModel

from memory import ids
from memory.degraded import DECIDE_FACTS, EXTRACT_REFLECTIONS, DegradedWindow
from memory.deps import Deps
from memory.errors import InvalidInputError, MalformedOutputError
from memory.llm.base import LLMRequest, LLMResult
from memory.llm.heuristic import HeuristicProvider
from memory.model_check import CheckReport, form_session
from memory.models import FactFilter, MessageIn
from memory.prompts.extract_facts import ExtractedFacts
from memory.reform import reform
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder, facts_input, reflections_input
from tests.store.test_contract_degraded import recording
from tests.store.test_reform import T0, said


class Rewords(HeuristicProvider):
    """The offline model, as a real one behaves: messages extracted again give their facts in
    other words (those holding ``rewording``). ``reflections_fail``: its reflection step's output
    unusable; ``decisions_fail``: its dedup decisions cut at the token cap. Notes what each
    extraction was shown."""

    def __init__(self, rewording: str = "") -> None:
        self.rewording = rewording
        self.reflections_fail = False
        self.decisions_fail = False
        self.seen: set[tuple[str, ...]] = set()  # the messages extracted before
        self.extracted: list[list[str]] = []  # the messages each fact extraction read
        self.reflected: list[tuple[list[str], list[str]]] = []  # messages, newly formed facts

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        if request.task == "extract_reflections":
            shown = reflections_input(request)
            self.reflected.append(([m.content for m in shown.messages], shown.new_facts))
            if self.reflections_fail:
                raise MalformedOutputError("output does not fit the schema")
        if request.task == "decide_facts" and self.decisions_fail:
            raise MalformedOutputError("output hit the token limit (finish_reason=length)")
        result = await super().generate_structured(request, schema)
        if request.task == "extract_facts" and isinstance(result.value, ExtractedFacts):
            said = [m.content for m in facts_input(request).messages]
            if tuple(said) in self.seen and self.rewording in " ".join(said):
                for fact in result.value.facts:
                    fact.content = f"As Kay put it: {fact.content}"
            self.seen.add(tuple(said))
            self.extracted.append(said)
        return result


def record(after: int, step: str) -> DegradedWindow:
    """The record FormMemories' commit writes for one window of s1 whose ``step`` fell back."""
    return DegradedWindow(
        agent_id="eve", session_id="s1", after_seq=after, upto_seq=after + 1, step=step,
        reason="output does not fit the schema",
        formation_id=ids.formation_id("s1", "eve", after, after + 1), degraded_at=T0,
    )  # fmt: skip


def _deps(store: MemoryStore, llm: Rewords) -> Deps:
    return Deps(settings=Settings(), store=store, llm=llm, embedder=WordHashEmbedder())


async def _form(
    store: MemoryStore, llm: Rewords, session: str, message: MessageIn, *records: DegradedWindow
) -> None:
    """The message recorded and formed alone, its commit recording ``records``."""
    await store.record_messages(
        session, "eve", [message], weights={"user": 1.0}, chars_per_token=4.0, now=T0
    )
    deps = _deps(store, llm)
    await form_session(
        replace(deps, store=recording(store, *records)), "eve", session, CheckReport()
    )


async def _valid(store: MemoryStore, word: str) -> list[str]:
    facts = await store.recent_facts(
        FactFilter(agent_id="eve", user_id="kay"), since=T0 - timedelta(days=1), limit=100
    )
    return sorted(f.content for f in facts if word in f.content)


LOCKER = "My locker code is 4411."
STORED = "Kay's locker code is 4411."  # as the offline model words it the first time


async def _reflections_passed_over(store: MemoryStore, *records: DegradedWindow) -> Rewords:
    """s1's one message formed: its fact stored, its reflection step passed over."""
    llm = Rewords()
    llm.reflections_fail = True
    await _form(store, llm, "s1", said(0, LOCKER), *records)
    assert await _valid(store, "4411") == [STORED]
    llm.reflections_fail = False
    llm.extracted.clear()
    llm.reflected.clear()
    return llm


async def test_reforming_a_windows_reflections_keeps_its_facts_once(store: MemoryStore) -> None:
    llm = await _reflections_passed_over(store, record(0, EXTRACT_REFLECTIONS))
    assert [w.step for w in await store.list_degraded()] == [EXTRACT_REFLECTIONS]

    again = await reform(_deps(store, llm), "eve", "s1", 0, 1, with_reflections=True)

    assert await _valid(store, "4411") == [STORED]
    assert (again.commit.facts_added, again.commit.reflections_added > 0) == (0, True)
    assert again.steps == (EXTRACT_REFLECTIONS,)
    assert llm.extracted == []  # its facts were not extracted again
    assert llm.reflected == [([LOCKER], [STORED])]  # shown the fact as formed, not to repeat it
    assert (again.marked, await store.list_degraded()) == (1, [])
    state = await store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 1

    # Once more: nothing left to re-form, and nothing written.
    with pytest.raises(InvalidInputError, match="all re-formed"):
        await reform(_deps(store, llm), "eve", "s1", 0, 1, with_reflections=True)
    assert await _valid(store, "4411") == [STORED]


async def test_without_reflections_a_window_whose_reflections_alone_fell_back_stays(
    store: MemoryStore,
) -> None:
    """The person left --reflections out: the window's facts, formed well, are not formed
    again, and its record stays listed, to be re-formed with it."""
    llm = await _reflections_passed_over(store, record(0, EXTRACT_REFLECTIONS))

    with pytest.raises(InvalidInputError, match="--reflections"):
        await reform(_deps(store, llm), "eve", "s1", 0, 1)

    assert await _valid(store, "4411") == [STORED]
    assert [w.step for w in await store.list_degraded()] == [EXTRACT_REFLECTIONS]


async def test_a_window_the_store_holds_no_record_of_re_forms_its_reflections_alone(
    store: MemoryStore,
) -> None:
    """Degraded before the store recorded its windows (`degraded list` read it from the run's
    memo, whose line for the reflection step says --reflections): its reflections alone."""
    llm = await _reflections_passed_over(store)  # no record
    assert await store.list_degraded() == []

    again = await reform(_deps(store, llm), "eve", "s1", 0, 1, with_reflections=True)

    assert await _valid(store, "4411") == [STORED]
    assert (again.commit.reflections_added > 0, again.marked) == (True, 0)
    assert llm.reflected == [([LOCKER], [STORED])]


async def test_a_range_re_forms_each_window_for_the_step_that_fell_back(
    store: MemoryStore,
) -> None:
    """s1's message 1 corrects a budget, its decisions fell back (the correction added unmerged);
    message 2's facts formed well, its reflections passed over. Re-forming messages 1-2 with
    --reflections decides message 1 again and reflects on message 2 alone."""
    llm = Rewords(rewording="locker")  # the budget worded alike: its re-form converges on the copy
    await _form(store, llm, "s0", said(0, "The festival budget is $50,000."))
    llm.decisions_fail = True
    budget = said(1, "The festival budget is $65,000.")
    await _form(store, llm, "s1", budget, record(0, DECIDE_FACTS))
    llm.decisions_fail, llm.reflections_fail = False, True
    await _form(store, llm, "s1", said(2, LOCKER), record(1, EXTRACT_REFLECTIONS))
    llm.reflections_fail = False
    assert len(await _valid(store, "budget")) == 2  # the fallback: added unmerged
    llm.extracted.clear()
    llm.reflected.clear()

    again = await reform(_deps(store, llm), "eve", "s1", 0, 2, with_reflections=True)

    assert await _valid(store, "budget") == ["The festival budget is $65,000."]
    assert await _valid(store, "4411") == [STORED]
    assert llm.extracted == [[budget.content]]
    assert [messages for messages, _ in llm.reflected] == [[LOCKER]]
    assert again.steps == ("extract_facts", DECIDE_FACTS, EXTRACT_REFLECTIONS)
    assert (again.marked, await store.list_degraded()) == (2, [])
