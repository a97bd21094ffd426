"""`mnemos degraded reform` over a range wider than one degraded window: windows of s1 whose
decisions fell back each added a contradicting copy unmerged. Re-forming a range holding them
(both at once, or the whole session around one) must set aside each window's copies before
deciding again (as re-forming each window alone does), or leave their records listed: a record marked re-formed while two contradicting facts stay valid
tells the person the problem is gone when it is not. Offline provider, real SQLite store (the
re-form only reads and marks records through the store contract, tested on every backend in
tests/store/test_contract_degraded.py)."""

from __future__ import annotations

from datetime import timedelta

from memory import ids
from memory.degraded import DECIDE_FACTS, DegradedWindow
from memory.deps import Deps
from memory.llm.heuristic import HeuristicProvider
from memory.model_check import CheckReport, form_session
from memory.models import AgentConfig, FactFilter, MessageIn
from memory.reform import reform
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.store.test_contract_degraded import recording
from tests.store.test_reform import T0, UndecidedHeuristic, said


def undecided(after: int, upto: int) -> DegradedWindow:
    """The record FormMemories' commit writes for a window whose decisions fell back."""
    return DegradedWindow(
        agent_id="eve", session_id="s1", after_seq=after, upto_seq=upto, step=DECIDE_FACTS,
        reason="output hit the token limit", formation_id=ids.formation_id("s1", "eve", after, upto),
        degraded_at=T0,
    )  # fmt: skip


async def _valid(store: MemoryStore, word: str) -> list[str]:
    facts = await store.recent_facts(
        FactFilter(agent_id="eve", user_id="kay"), since=T0 - timedelta(days=1), limit=100
    )
    return sorted(f.content for f in facts if word in f.content)


async def _undecided(store: MemoryStore, fell_back: tuple[int, ...]) -> Deps:
    """s0 formed well (a budget, a capacity); s1's messages 1 (a new budget) and 2 (a new
    capacity) each formed alone, the decisions of the windows ``fell_back`` (their after_seq)
    falling back: each such window added its correction unmerged, next to the fact it corrects."""
    embedder = WordHashEmbedder()
    deps = Deps(settings=Settings(), store=store, llm=HeuristicProvider(), embedder=embedder)
    broken = Deps(
        settings=Settings(),
        store=recording(store, *(undecided(after, after + 1) for after in fell_back)),
        llm=UndecidedHeuristic(),
        embedder=embedder,
    )
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))

    async def form(deps: Deps, session: str, message: MessageIn) -> None:
        await store.record_messages(
            session, "eve", [message], weights={"user": 1.0}, chars_per_token=4.0, now=T0
        )
        await form_session(deps, "eve", session, CheckReport())

    s0 = ["The festival budget is $50,000.", "The venue capacity is 200 people."]
    for i, text in enumerate(s0):
        await form(deps, "s0", said(i, text))
    s1 = ["The festival budget is $65,000.", "The venue capacity is 300 people."]
    for after, text in enumerate(s1):
        await form(broken if after in fell_back else deps, "s1", said(2 + after, text))
    listed = await store.list_degraded()
    assert sorted((w.after_seq, w.upto_seq) for w in listed) == [(a, a + 1) for a in fell_back]
    return deps


async def _contradictions(store: MemoryStore) -> dict[str, list[str]]:
    """The subjects of which more than one statement is valid."""
    found = {word: await _valid(store, word) for word in ("budget", "capacity")}
    return {word: texts for word, texts in found.items() if len(texts) > 1}


async def test_reforming_two_undecided_windows_at_once_converges_both(
    store: MemoryStore,
) -> None:
    deps = await _undecided(store, (0, 1))
    assert sorted(await _contradictions(store)) == ["budget", "capacity"]

    again = await reform(deps, "eve", "s1", 0, 2)

    assert await _contradictions(store) == {}
    assert await _valid(store, "budget") == ["The festival budget is $65,000."]
    assert await _valid(store, "capacity") == ["The venue capacity is 300 people."]
    assert again.marked == 2
    assert await store.list_degraded() == []
    state = await store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 2


async def test_reforming_the_whole_session_converges_its_undecided_window(
    store: MemoryStore,
) -> None:
    """Messages 1-2 re-formed, though only the window of message 2 fell back (a person
    re-forming everything formed so far, not looking the window up)."""
    deps = await _undecided(store, (1,))
    assert sorted(await _contradictions(store)) == ["capacity"]

    again = await reform(deps, "eve", "s1", 0, 2)

    assert await _contradictions(store) == {}
    assert await _valid(store, "capacity") == ["The venue capacity is 300 people."]
    assert again.marked == 1
    assert await store.list_degraded() == []
