"""A message dense with facts (memory/pipeline/slices.py): where a piece whose answer overflows is
halved, how a window's facts beyond one formation's bound are cut into passes, what counts as an
overflowing answer, and the pipeline's reading of such a message (the re-form's way)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memory import transcript
from memory.deps import Deps
from memory.errors import MalformedOutputError, WindowTooLargeError
from memory.llm.heuristic import HeuristicProvider
from memory.models import MessageIn
from memory.pipeline import facts, reflections, window
from memory.pipeline.slices import overflowed, pass_id, passes
from memory.pipeline.types import FormationRequest, NewFact, Window
from memory.prompts.extract_facts import ExtractedFacts
from memory.prompts.extract_reflections import MAX_REFLECTIONS
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import ScriptedLLM, WordHashEmbedder
from tests.harness import T0
from tests.harness import reflections as scripted_reflections

DENSE = " ".join(f"My favourite number {i} is {1000 + 7 * i}." for i in range(1, 46))


def test_a_piece_is_halved_at_a_sentence_end_down_to_about_a_sentence() -> None:
    left, right = transcript.halve(DENSE, 0, len(DENSE))
    assert DENSE[left[0] : left[1]].endswith(".") and DENSE[right[0]].isalpha()
    assert abs((left[1] - left[0]) - (right[1] - right[0])) < 40  # near the middle
    assert DENSE[: left[1]] + " " + DENSE[right[0] :] == DENSE  # nothing left out
    short = (0, transcript.MIN_SLICE_CHARS)
    assert transcript.halve(DENSE, *short) == [short]  # not cut smaller
    # Halved in turn: slice 0 of the message, its first half's second half.
    budget = len(DENSE) + 1
    span = transcript.piece(DENSE, budget, 0, (0, 1))
    assert span == transcript.halve(DENSE, *left)[1]
    shown = transcript.sliced(DENSE, budget, 0, (0, 1))
    assert shown.startswith(f"{transcript.CUT} ") and shown.endswith(f" {transcript.CUT}")
    assert transcript.sliced(DENSE, budget, 0) == DENSE  # the whole message, unmarked
    assert transcript.can_halve(DENSE, budget, 0, (0,))
    # A piece halved to the least size cannot be halved again; its second half is none.
    deep: tuple[int, ...] = ()
    while transcript.can_halve(DENSE, budget, 0, deep):
        deep = (*deep, 0)
    assert transcript.piece(DENSE, budget, 0, (*deep, 1)) is None
    assert transcript.sliced(DENSE, budget, 0, (*deep, 1)) == ""


def test_facts_beyond_one_formation_are_cut_into_even_passes_numbered_anew() -> None:
    many = [NewFact(index=i, content=f"fact {i}", scope="user") for i in range(45)]
    groups = passes(many, 40)
    assert [len(g) for g in groups] == [22, 23]
    assert [f.index for f in groups[1]] == list(range(23))
    assert [f.content for g in groups for f in g] == [f.content for f in many]
    assert passes(many[:40], 40) == [many[:40]] and passes(many, None) == [many]
    assert passes([], 40) == [[]]
    assert pass_id("eve:s1:0-1", 0) == "eve:s1:0-1:pass:1"


def test_an_answer_too_long_for_its_list_overflowed_and_another_bad_one_did_not() -> None:
    def malformed(answer: object) -> MalformedOutputError:
        try:
            ExtractedFacts.model_validate(answer)
        except ValidationError as e:
            try:
                raise MalformedOutputError("output does not fit the schema") from e
            except MalformedOutputError as m:
                return m
        raise AssertionError("valid")

    item = {"content": "x", "scope": "user", "speaker": None}
    assert overflowed(malformed({"facts": [item] * 41}))
    assert not overflowed(malformed({"facts": [{"content": 3}]}))
    assert not overflowed(MalformedOutputError("cut at the output token limit"))


async def _one_message(store: MemoryStore, content: str) -> Window:
    said = MessageIn(message_id="m0", role="user", user_id="alice", content=content, created_at=T0)
    await store.record_messages("s1", "eve", [said], weights={}, chars_per_token=4.0, now=T0)
    req = FormationRequest(session_id="s1", agent_id="eve", force=True)
    w = await window.load_window(store, Settings(), req)
    assert w is not None and (w.message_count, w.slices) == (1, 1)
    return w


async def test_the_pipeline_reads_a_dense_message_in_halves_and_the_step_asks_for_them(
    store: MemoryStore,
) -> None:
    """The re-form's way reads the halves itself (one commit: the facts kept to one formation's
    bound, the rest counted as dropped); the workflow's step raises for it to read them."""
    w = await _one_message(store, DENSE)
    deps = Deps(
        settings=Settings(), store=store, llm=HeuristicProvider(), embedder=WordHashEmbedder()
    )
    every = await facts.extract_facts(deps, w)
    assert len(every.facts) == 40 and every.dropped == 5
    assert len(every.llm) == 2  # the halves (the whole message's answer failed)
    with pytest.raises(WindowTooLargeError, match="read in halves"):
        await facts.extract_facts(deps, w, reslice=False)
    half = await facts.extract_facts(deps, w, part=0, halves=(1,))
    assert half.facts[-1].content == "Alice's favourite number 45 is 1315."


async def test_a_full_reflection_answer_for_one_message_is_kept_not_halved(
    store: MemoryStore,
) -> None:
    """Eight reflections of a scope are an ordinary answer for a long message: halving on a
    full answer (rather than an overflow) would cost up to two calls per 200 characters."""
    w = await _one_message(store, DENSE)
    full = scripted_reflections(user=[f"Alice likes number {i}" for i in range(MAX_REFLECTIONS)])
    llm = ScriptedLLM({"extract_reflections": full})
    deps = Deps(settings=Settings(), store=store, llm=llm, embedder=WordHashEmbedder())
    kept = await reflections.extract_reflections(deps, w, [], reslice=False)
    assert len(kept.reflections) == MAX_REFLECTIONS
    assert len(llm.calls("extract_reflections")) == 1
