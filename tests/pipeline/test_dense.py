"""A dense message outside the workflow (`mnemos degraded reform` reads through the pipeline:
memory/reform.py): read whole, in pieces (memory/pipeline/pieces.py); and a decision about more
new facts than one answer carries, asked in chunks (memory/pipeline/dedup.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memory import ids, reform
from memory.degraded import DegradedWindow, formations_of, unmerged_copies
from memory.deps import Deps
from memory.errors import MalformedOutputError
from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig, MessageIn
from memory.pipeline import dedup, facts, pieces, window
from memory.pipeline.reflections import extract_reflections
from memory.pipeline.types import (
    CandidatesResult,
    ExtractedFactsResult,
    FormationRequest,
    NewFact,
    SimilarFact,
    Window,
)
from memory.prompts.common import MAX_ITEMS
from memory.prompts.decide_facts import FactDecisions
from memory.prompts.extract_reflections import ExtractReflectionsInput
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import ScriptedLLM, WordHashEmbedder
from tests.harness import T0, add_all, reflections


def dense(n: int) -> str:
    return " ".join(f"My favourite number {i} is {4100 + i}." for i in range(1, n + 1))


async def test_the_pipeline_reads_a_dense_message_whole(store: MemoryStore) -> None:
    """Before, the offline provider's answer overflowed its bound: nothing was extracted."""
    said = MessageIn(
        message_id="m0", role="user", user_id="alice", content=dense(90), created_at=T0
    )
    await store.record_messages("s1", "eve", [said], weights={}, chars_per_token=4.0, now=T0)
    settings = Settings()
    deps = Deps(
        settings=settings, store=store, llm=HeuristicProvider(), embedder=WordHashEmbedder()
    )
    w = await window.load_window(
        store, settings, FormationRequest(session_id="s1", agent_id="eve", force=True)
    )
    assert w is not None and w.message_count == 1

    every = await facts.extract_facts(deps, w)
    assert len(every.facts) == 90 and [f.index for f in every.facts] == list(range(90))
    for i in (1, 45, 90):
        assert any(f"number {i} is {4100 + i}" in f.content for f in every.facts)
    assert len(every.llm) == 4  # the four quarters answered; the whole and halves overflowed
    # The extract_facts activity, as older workflow code schedules it, reads it as before: in
    # one answer, which overflows (FormMemories reads it piece by piece since DENSE_MESSAGES).
    with pytest.raises(MalformedOutputError):
        await facts.extract_facts(deps, w, halving=False)


def test_a_re_form_finds_every_unmerged_copy_of_a_dense_window() -> None:
    """Bounded per formation: a window of one message by MAX_DENSE_FACTS, one of several by
    facts.max_per_formation (each used to count most_facts of the longest message: 13,560)."""
    assert pieces.most_facts(1, 40) == pieces.MAX_DENSE_FACTS == 8 * MAX_ITEMS
    assert pieces.most_facts(5, 40) == 40
    dense = unmerged_copies({"f1": pieces.most_facts(1, 40)})
    assert ids.fact_id("f1", 89) in dense and ids.fact_id("f1", 319) in dense
    assert ids.fact_id("f1", 320) not in dense
    assert ids.fact_id("f1", 89) not in unmerged_copies({"f1": 40})  # the old bound
    records = [_record(0, 5), _record(5, 6)]  # a window of five messages, one of one
    windows = formations_of(records)
    assert sorted(windows.values()) == [1, 1, 5, 5]  # each record names two formations
    flagged = unmerged_copies({f: pieces.most_facts(n, 40) for f, n in windows.items()})
    assert len(flagged) == 2 * 40 + 2 * pieces.MAX_DENSE_FACTS


def _record(after_seq: int, upto_seq: int) -> DegradedWindow:
    return DegradedWindow(
        agent_id="eve",
        session_id="s1",
        after_seq=after_seq,
        upto_seq=upto_seq,
        step="decide_fact_changes",
        reason="fallback",
        formation_id=f"form-{after_seq}",
        degraded_at=T0,
    )


def _window() -> Window:
    return Window(
        formation_id="f1",
        session_id="s1",
        agent_id="eve",
        user_id="alice",
        after_seq=0,
        upto_seq=1,
        message_count=1,
        fact_scopes=("user", "agent"),
        reflection_scopes=("user", "session"),
        agent=AgentConfig(agent_id="eve", name="Eve"),
    )


def _add_all(request: LLMRequest) -> FactDecisions:
    assert len(getattr(request.task_input, "new_facts", [])) <= MAX_ITEMS  # one answer's bound
    return add_all(request)


async def _decide(store: MemoryStore, n: int) -> tuple[list[str], int]:
    llm = ScriptedLLM({"decide_facts": _add_all})
    deps = Deps(settings=Settings(), store=store, llm=llm, embedder=WordHashEmbedder())
    new = [NewFact(index=i, content=f"Alice's code {i} is K{i}Z", scope="user") for i in range(n)]
    # Each new fact with a stored fact of other words as its candidate: the model decides.
    candidates = CandidatesResult(
        by_new_index={
            i: [SimilarFact(fact_id=f"old{i}", content=f"Bob's pin {i}", version=1, similarity=0.9)]
            for i in range(n)
        }
    )
    out = await dedup.decide(deps, _window(), new, candidates)
    assert [d.new_index for d in out.decisions] == list(range(n))  # every fact, once, in order
    return [d.event for d in out.decisions], len(llm.calls("decide_facts"))


async def test_more_contested_facts_than_one_answer_carries_are_decided_in_chunks(
    store: MemoryStore,
) -> None:
    events, calls = await _decide(store, 55)
    assert events == ["ADD"] * 55 and calls == 2
    events, calls = await _decide(store, 12)  # an ordinary window: one call, as before
    assert events == ["ADD"] * 12 and calls == 1


async def _one_message(store: MemoryStore, content: str) -> tuple[Settings, Window]:
    said = MessageIn(message_id="m0", role="user", user_id="alice", content=content, created_at=T0)
    await store.record_messages("s1", "eve", [said], weights={}, chars_per_token=4.0, now=T0)
    settings = Settings()
    w = await window.load_window(
        store, settings, FormationRequest(session_id="s1", agent_id="eve", force=True)
    )
    assert w is not None
    return settings, w


async def test_a_reflection_prompt_shows_at_most_one_answer_of_formed_facts(
    store: MemoryStore,
) -> None:
    """h78: every formed fact of a dense message, uncapped (299 here), in every slice's prompt."""
    settings, w = await _one_message(store, dense(299))
    llm = ScriptedLLM({"extract_reflections": reflections()})
    deps = Deps(settings=settings, store=store, llm=llm, embedder=WordHashEmbedder())
    ordinary = [f"Alice's favourite number {i} is {4100 + i}" for i in range(1, 41)]
    await extract_reflections(deps, w, ordinary)
    assert _shown(llm) == ordinary  # an ordinary window's prompt, unchanged
    formed = [f"Alice's favourite number {i} is {4100 + i}" for i in range(1, 300)]
    await extract_reflections(deps, w, formed)
    shown = _shown(llm)
    assert len(shown) == MAX_ITEMS and shown[0] == formed[0] and shown[-1] in formed[-8:]


def _shown(llm: ScriptedLLM) -> list[str]:
    task_input = llm.calls("extract_reflections")[-1].task_input
    assert isinstance(task_input, ExtractReflectionsInput)
    return list(task_input.new_facts)


async def test_a_re_form_finds_the_stored_facts_of_a_dense_window_past_an_empty_page(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """h78: the first 40 facts of a dense window were decided NONE or UPDATE (none stored under
    their own ids), its facts 40-89 added: a reflection-only re-form found none of them."""
    settings, w = await _one_message(store, "My code is 4411. " * 100)
    [m] = await store.load_messages("s1", 0, 1)
    stored = {
        ids.fact_id("F", i): SimpleNamespace(
            content=f"fact {i}", invalidated_at=None, source_message_ids=(m.message_id,)
        )
        for i in range(40, 90)
    }

    async def get_facts(fact_ids: list[str]) -> list[object]:
        return [stored[i] for i in fact_ids if i in stored]

    monkeypatch.setattr(store, "get_facts", get_facts)
    deps = Deps(settings=settings, store=store, llm=ScriptedLLM({}), embedder=WordHashEmbedder())
    got = await reform._stored_facts(deps, w, {"F": pieces.most_facts(1, 40)})
    assert sorted(got) == sorted(f"fact {i}" for i in range(40, 90))
    # A window of several messages: its formation's bound, facts.max_per_formation.
    assert await reform._stored_facts(deps, w, {"F": pieces.most_facts(2, 40)}) == []


def _piece(texts: list[str]) -> ExtractedFactsResult:
    return ExtractedFactsResult(
        facts=[NewFact(index=i, content=t, scope="user") for i, t in enumerate(texts)]
    )


def test_a_dense_window_keeps_no_more_text_than_its_payloads_carry() -> None:
    # helper 81: 320 facts of 400 emoji are a 3.9 MB commit, past Temporal's 2 MB a payload.
    emoji = [[f"{p} {i} " + "🙂" * 390 for i in range(40)] for p in range(8)]
    kept = pieces.merged([_piece(texts) for texts in emoji])
    size = sum(len(f.content.encode()) for f in kept.facts)
    assert size <= pieces.MAX_DENSE_BYTES < size + len(emoji[0][0].encode())
    assert len(kept.facts) < pieces.MAX_DENSE_FACTS and kept.dropped == 320 - len(kept.facts)
    # Taken from the pieces in turn, so the tail of the message keeps its share.
    assert {f.content.split()[0] for f in kept.facts} == {str(p) for p in range(8)}
    # Short facts are kept to the count's bound.
    short = [[f"Alice's code {p}-{i} is set" for i in range(40)] for p in range(9)]
    assert len(pieces.merged([_piece(t) for t in short]).facts) == pieces.MAX_DENSE_FACTS
