"""`mnemos degraded reform` of a window whose decisions fell back, with a model that words a fact
it extracts again in other words (as a real one does): the fallback's unmerged copy of a
statement and the re-form's new decision about it must not both stay valid, as they did when only
the same words converged (the store's exact-duplicate rule). The copy a new decision covers is
superseded in the re-form's commit; one a person edited since, and one the extraction did not
give again, stay valid (nothing said is dropped). Offline provider, real SQLite store (the
records written as the formation's commit writes them, tests/store/test_contract_degraded.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from pydantic import BaseModel

from memory import ids
from memory.degraded import DECIDE_FACTS
from memory.deps import Deps
from memory.errors import MalformedOutputError
from memory.llm.base import LLMRequest, LLMResult
from memory.llm.heuristic import HeuristicProvider
from memory.model_check import CheckReport, form_session
from memory.models import Fact, FactFilter, MessageIn
from memory.prompts.extract_facts import ExtractedFacts
from memory.reform import reform
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder, facts_input
from tests.pipeline.test_reform_reflections import record
from tests.store.test_contract_degraded import recording
from tests.store.test_reform import T0, said

OLD = "The festival budget is $50,000."
BUDGET = "The festival budget is $65,000."  # also the fallback's copy: the offline model's words
REWORDED = "The festival budget is now $65,000."  # the same statement, extracted again
CAPACITY = "The venue capacity is 300 people."


class SaysItAgain(HeuristicProvider):
    """The offline model, as a real one behaves: a message it extracted before gives its facts in
    other words ("is" becomes "is now", which the offline decisions still read as the same
    subject), and none holding ``missed``. ``decisions_fail``: its dedup decisions cut at the
    token cap."""

    def __init__(self, *, reword: bool = True, missed: str | None = None) -> None:
        self.reword, self.missed = reword, missed
        self.decisions_fail = False
        self.seen: set[tuple[str, ...]] = set()  # the messages extracted before

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        if request.task == "decide_facts" and self.decisions_fail:
            raise MalformedOutputError("output hit the token limit (finish_reason=length)")
        result = await super().generate_structured(request, schema)
        if request.task == "extract_facts" and isinstance(result.value, ExtractedFacts):
            said = tuple(m.content for m in facts_input(request).messages)
            if said in self.seen:
                extracted = result.value.facts
                if self.missed:
                    extracted[:] = [f for f in extracted if self.missed not in f.content]
                for fact in extracted if self.reword else ():
                    fact.content = fact.content.replace(" is ", " is now ", 1)
            self.seen.add(said)
        return result


def _deps(store: MemoryStore, llm: SaysItAgain) -> Deps:
    return Deps(settings=Settings(), store=store, llm=llm, embedder=WordHashEmbedder())


async def _form(store: MemoryStore, llm: SaysItAgain, session: str, text: str) -> None:
    """The message recorded and formed alone; s1's (its first) with its decisions fallen back,
    the commit recording that."""
    seq = {"s0": 0, "s1": 1}[session]
    message: MessageIn = said(seq, text)
    await store.record_messages(
        session, "eve", [message], weights={"user": 1.0}, chars_per_token=4.0, now=T0
    )
    llm.decisions_fail = session == "s1"
    records = [record(0, DECIDE_FACTS)] if session == "s1" else []
    deps = replace(_deps(store, llm), store=recording(store, *records))
    await form_session(deps, "eve", session, CheckReport())
    llm.decisions_fail = False


async def _valid(store: MemoryStore, word: str) -> list[str]:
    facts = await store.recent_facts(
        FactFilter(agent_id="eve", user_id="kay"), since=T0 - timedelta(days=1), limit=100
    )
    return sorted(f.content for f in facts if word in f.content)


async def _copy(store: MemoryStore, word: str) -> Fact:
    """The fact s1's decide fallback added unmerged holding ``word``."""
    session = await store.get_session("s1")
    assert session is not None
    formation = ids.formation_id("s1", "eve", 0, 1, session.created_at)
    stored = await store.get_facts([ids.fact_id(formation, i) for i in range(5)])
    return next(f for f in stored if word in f.content)


async def _fell_back(store: MemoryStore, llm: SaysItAgain, s0: str | None, s1: str) -> None:
    """s0 said ``s0`` and formed well; s1 said ``s1``, its decisions fell back: its facts were
    added unmerged, next to what they correct or repeat."""
    if s0 is not None:
        await _form(store, llm, "s0", s0)
    await _form(store, llm, "s1", s1)
    assert [w.step for w in await store.list_degraded()] == [DECIDE_FACTS]


async def test_a_reworded_correction_leaves_one_valid_fact(store: MemoryStore) -> None:
    """Decided again, the correction UPDATEs the $50,000 in other words than its copy's: the
    copy goes with it, replaced by the fact the UPDATE wrote."""
    llm = SaysItAgain()
    await _fell_back(store, llm, OLD, BUDGET)
    assert await _valid(store, "budget") == [OLD, BUDGET]

    again = await reform(_deps(store, llm), "eve", "s1", 0, 1)

    assert await _valid(store, "budget") == [REWORDED]
    copy = await _copy(store, "budget")
    assert copy.invalidated_at is not None
    assert [f.content for f in await store.get_facts([copy.invalidated_by or ""])] == [REWORDED]
    assert (again.marked, await store.list_degraded()) == (1, [])
    state = await store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 1


async def test_a_new_fact_reworded_leaves_one_valid_fact(store: MemoryStore) -> None:
    """Nothing was stored before: the new fact is ADDed again, reworded, and supersedes its copy."""
    llm = SaysItAgain()
    await _fell_back(store, llm, None, BUDGET)

    await reform(_deps(store, llm), "eve", "s1", 0, 1)

    assert await _valid(store, "budget") == [REWORDED]


async def test_a_restatement_the_fallback_added_reworded_leaves_one_valid_fact(
    store: MemoryStore,
) -> None:
    """s1 said again what s0 said; the fallback added it in other words (no exact duplicate).
    Decided again, it is what s0 said (NONE): its copy goes, the fact s0 formed stays."""
    llm = SaysItAgain()
    await _fell_back(store, llm, BUDGET, BUDGET)
    assert await _valid(store, "budget") == [BUDGET, REWORDED]

    await reform(_deps(store, llm), "eve", "s1", 0, 1)

    assert await _valid(store, "budget") == [BUDGET]
    assert (await _copy(store, "budget")).invalidated_at is not None


async def test_a_re_form_in_the_same_words_keeps_the_copy_as_the_one_fact(
    store: MemoryStore,
) -> None:
    llm = SaysItAgain(reword=False)
    await _fell_back(store, llm, OLD, BUDGET)

    await reform(_deps(store, llm), "eve", "s1", 0, 1)

    assert await _valid(store, "budget") == [BUDGET]
    assert (await _copy(store, "budget")).invalidated_at is None


async def test_a_copy_a_person_edited_since_stays(store: MemoryStore) -> None:
    llm = SaysItAgain()
    await _fell_back(store, llm, OLD, BUDGET)
    copy = await _copy(store, "budget")
    edited = "The festival budget is $65,000 in total."
    embedder = WordHashEmbedder()
    await store.edit_fact(
        copy.fact_id, content=edited, embedding=(await embedder.embed([edited])).vectors[0],
        embedding_model=embedder.model, at=T0 + timedelta(hours=1),
    )  # fmt: skip

    await reform(_deps(store, llm), "eve", "s1", 0, 1)

    assert await _valid(store, "budget") == sorted([edited, REWORDED])


async def test_a_copy_the_extraction_missed_stays(store: MemoryStore) -> None:
    """s1's message said a budget and a capacity; extracted again, the budget alone: its copy is
    superseded, the capacity's is kept (what was said is never dropped)."""
    llm = SaysItAgain(missed="capacity")
    await _fell_back(store, llm, OLD, f"{BUDGET} {CAPACITY}")
    assert await _valid(store, "capacity") == [CAPACITY]

    await reform(_deps(store, llm), "eve", "s1", 0, 1)

    assert await _valid(store, "budget") == [REWORDED]
    assert await _valid(store, "capacity") == [CAPACITY]


async def test_a_correction_within_the_window_leaves_its_last_statement(
    store: MemoryStore,
) -> None:
    """s1's message corrected itself: both its statements were added unmerged. Decided again,
    both UPDATE the $50,000 in turn, and each copy goes with its statement."""
    llm = SaysItAgain()
    await _fell_back(store, llm, OLD, f"{BUDGET} Sorry, the festival budget is $70,000.")
    assert len(await _valid(store, "budget")) == 3

    await reform(_deps(store, llm), "eve", "s1", 0, 1)

    assert await _valid(store, "budget") == ["The festival budget is now $70,000."]
