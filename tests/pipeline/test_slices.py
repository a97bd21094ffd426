"""A message longer than the formation budget, in slices (memory/pipeline/slices.py): where the
slices are cut, how the slices' results are merged, and the window and steps that read them (the
re-form's way, every slice in one call, included)."""

from __future__ import annotations

import re
from datetime import timedelta
from itertools import pairwise

from memory import transcript
from memory.deps import Deps
from memory.llm.heuristic import HeuristicProvider
from memory.models import MessageIn
from memory.pipeline import facts, reflections, window
from memory.pipeline.slices import merge_facts, merge_reflections
from memory.pipeline.types import (
    ExtractedFactsResult,
    FormationRequest,
    NewFact,
    NewReflection,
    ReflectionsResult,
)
from memory.settings import FormationSettings, Settings
from memory.store.base import MemoryStore
from memory.transcript import CUT_RULE
from tests.fakes import WordHashEmbedder
from tests.harness import T0

BUDGET = 400
TEXT = "All about my trip to Lisbon, the tram and the pastries by the river. " * 40


def test_slices_stay_within_the_budget_cut_between_words_and_leave_nothing_out() -> None:
    cuts = transcript.spans(TEXT, BUDGET, rule=CUT_RULE)
    assert len(cuts) == 8  # 2,720 characters, in slices of whole sentences (5 of 69 characters)
    parts = [TEXT[a:b] for a, b in cuts]
    assert all(0 < len(p) <= BUDGET for p in parts)
    assert all(end == len(TEXT) or TEXT[end].isspace() for _, end in cuts)  # a word is not split
    assert all(TEXT[:end].rstrip().endswith("river.") for _, end in cuts)  # nor a sentence
    assert " ".join(parts).split() == TEXT.split()  # every word, in order, once
    assert all(b <= a2 for (_, b), (a2, _) in pairwise(cuts))


def test_a_text_without_whitespace_is_cut_at_the_bound_and_a_short_one_is_whole() -> None:
    assert transcript.spans("x" * 1000, BUDGET, rule=CUT_RULE) == [
        (0, 400),
        (400, 800),
        (800, 1000),
    ]
    assert transcript.spans("short", BUDGET, rule=CUT_RULE) == [(0, 5)]


def test_a_slice_is_marked_where_the_message_goes_on_and_the_marks_are_never_said() -> None:
    first, middle, last = (transcript.sliced(TEXT, BUDGET, n, rule=CUT_RULE) for n in (0, 3, 7))
    assert not first.startswith("[…]") and first.endswith(" […]")
    assert middle.startswith("[…] ") and middle.endswith(" […]")
    assert last.startswith("[…] ") and not last.endswith("[…]")
    assert transcript.sliced(TEXT, BUDGET, 8, rule=CUT_RULE) == ""
    assert transcript.as_said("[…] the pastries by the river. […]") == "the pastries by the river."


def _facts(*texts: str, cap: int | None = 3) -> ExtractedFactsResult:
    return ExtractedFactsResult(
        facts=[NewFact(index=i, content=t, scope="user") for i, t in enumerate(texts)],
        max_facts=cap,
    )


def test_merged_facts_are_numbered_anew_said_once_and_kept_to_the_cap_from_every_slice() -> None:
    merged = merge_facts([_facts("a1", "a2", "a3"), _facts("a1", "b1"), _facts("c1", "c2")])
    # a1 said twice is kept once; the cap of 3 takes one of each slice in turn, in message order.
    assert [(f.index, f.content) for f in merged.facts] == [(0, "a1"), (1, "b1"), (2, "c1")]
    assert merged.dropped == 4 and merged.max_facts == 3
    # A slice passed over is an empty part, without a cap.
    assert [f.content for f in merge_facts([_facts("a1"), _facts(cap=None)]).facts] == ["a1"]


def test_merged_reflections_are_kept_once_per_scope() -> None:
    def part(*items: tuple[str, str]) -> ReflectionsResult:
        return ReflectionsResult(reflections=[NewReflection(scope=s, content=c) for s, c in items])

    merged = merge_reflections([part(("user", "x"), ("session", "y")), part(("user", "x"))])
    assert [(r.scope, r.content) for r in merged.reflections] == [("user", "x"), ("session", "y")]


async def test_the_window_says_its_slices_and_a_step_without_a_part_reads_them_all(
    store: MemoryStore,
) -> None:
    """The re-form's way (memory/reform.py): the pipeline step, no part, reads every slice."""
    settings = Settings(formation=FormationSettings(max_tokens_per_run=BUDGET // 4))
    head, tail = "My locker code is 4411. ", " My passport number is X9912345."
    long = head + "We talked about the weather for a while. " * 30 + tail
    short = MessageIn(
        message_id="m1",
        role="user",
        user_id="alice",
        content="I work at Acme.",
        created_at=T0 + timedelta(minutes=1),
    )
    said = MessageIn(message_id="m0", role="user", user_id="alice", content=long, created_at=T0)
    await store.record_messages("s1", "eve", [said, short], weights={}, chars_per_token=4.0, now=T0)
    deps = Deps(
        settings=settings, store=store, llm=HeuristicProvider(), embedder=WordHashEmbedder()
    )
    req = FormationRequest(session_id="s1", agent_id="eve", force=True)
    w = await window.load_window(store, settings, req)
    assert w is not None and (w.message_count, w.more_pending) == (1, True)  # alone
    assert w.slices == len(transcript.spans(long, BUDGET, rule=CUT_RULE)) == 4

    every = await facts.extract_facts(deps, w)
    assert [re.findall(r"4411|X9912345", f.content) for f in every.facts] == [
        ["4411"],
        ["X9912345"],
    ]
    assert all(f.source_message_ids == ("m0",) for f in every.facts)
    assert len(every.llm) == 4  # one call per slice
    first = await facts.extract_facts(deps, w, part=0)
    assert [f.content for f in first.facts] == [every.facts[0].content]
    assert (await facts.extract_facts(deps, w, part=4)).facts == []  # none such
    assert len((await reflections.extract_reflections(deps, w, [])).llm) == 4
