"""Where a long message's slices are cut (memory/transcript.py ``spans``): at a sentence end when
a slice's last quarter holds one (r249: a sentence cut in two became a fragment fact, of the
agent's, which every user reads), else at a whitespace, else at the bound. A window planned
before that rule (a payload without ``slice_cut``) is still cut the old way: its parts are
formed after a deploy as they were planned."""

from __future__ import annotations

import random
import re

from memory import transcript
from memory.deps import Deps
from memory.llm.heuristic import HeuristicProvider
from memory.models import MessageIn
from memory.pipeline import facts, pieces, window
from memory.pipeline.types import FormationRequest, Window
from memory.settings import FormationSettings, Settings
from memory.store.base import MemoryStore
from memory.transcript import CUT_RULE, SENTENCE_CUT, WHITESPACE_CUT, spans
from tests.fakes import WordHashEmbedder
from tests.harness import T0

_SPACE = re.compile(r"\s")


def spans_before_h250(content: str, max_chars: int) -> list[tuple[int, int]]:
    """``spans`` as it was before the sentence cut, frozen (29be518:memory/transcript.py)."""
    out: list[tuple[int, int]] = []
    start, size = 0, len(content)
    while start < size:
        end = min(start + max_chars, size)
        if end < size:
            near = start + max_chars - max_chars // 4
            cut = max(
                (m.start() for m in _SPACE.finditer(content, max(near, start + 1), end + 1)),
                default=end,
            )
            end = cut
        out.append((start, end))
        start = end
        while start < size and content[start].isspace():
            start += 1
    return out or [(0, 0)]


# 40 characters: its sentence end (after "lamp.") falls in the last quarter of a slice of 40.
SENTENCE = "The lamp check went fine, all of it ok. "


def test_a_slice_ends_at_the_last_sentence_end_of_its_last_quarter() -> None:
    content = "First part of the text, long enough. Then more words follow here and on and on."
    # The last quarter of a slice of 48 (from 36) holds the sentence end at 36 and later spaces.
    assert spans(content, 48, rule=SENTENCE_CUT)[0] == (0, 36)
    assert content[:36].endswith("enough.")
    # The whitespace cut took the last space: "Then more" went with the first slice.
    assert spans(content, 48, rule=WHITESPACE_CUT)[0] == (0, 46)


def test_without_a_sentence_end_a_slice_ends_at_a_whitespace_and_else_at_the_bound() -> None:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    assert spans(words, 30, rule=SENTENCE_CUT) == spans(words, 30, rule=WHITESPACE_CUT)
    assert all(end == len(words) or words[end] == " " for _, end in spans(words, 30, rule=1))
    assert spans("x" * 100, 40, rule=SENTENCE_CUT) == [(0, 40), (40, 80), (80, 100)]


def test_a_blank_line_or_a_list_item_ends_a_sentence_and_one_before_the_last_quarter_does_not() -> (
    None
):
    listed = "milk and bread\n- eggs and a lot more on this long list of things"
    assert spans(listed, 18, rule=SENTENCE_CUT)[0] == (0, 14)  # the last quarter: from 14
    early = "Short. " + "word " * 20
    # "Short." ends at 6, far before the last quarter of 40 (30-40): a whitespace there instead.
    assert spans(early, 40, rule=SENTENCE_CUT)[0] == spans(early, 40, rule=WHITESPACE_CUT)[0]


def test_a_slice_is_not_cut_at_a_semicolon_nor_a_wrapped_line_and_says_so_where_it_must_be() -> (
    None
):
    """Not sentence ends the offline rules read as such (r251): "Rex; he is 4" cut at ";" made
    "He is 4 years old." the agent's, and text wrapped at a width breaks most sentences."""
    semi = "My dog is named Rex and he is called Rex; he is 4 years old and he loves the park."
    # The ";" (at 40) is in the first slice's last quarter (33-44): the cut is not there.
    end = spans(semi, 44, rule=SENTENCE_CUT)[0][1]
    assert not semi[:end].endswith(";")
    assert transcript.sliced(semi, 44, 0, rule=SENTENCE_CUT).endswith(transcript.CUT_MID)
    wrapped = "My dog is named\nRex and he is four years old and loves\nthe park by the river."
    first, second = (transcript.sliced(wrapped, 40, n, rule=SENTENCE_CUT) for n in (0, 1))
    assert first.endswith(transcript.CUT_MID) and second.startswith(transcript.CUT_MID)


def test_both_edges_of_a_cut_in_a_run_of_whitespace_say_the_same() -> None:
    """r251: the slice kept the run's first spaces, and its edge, looking only forward, said
    mid-sentence while the next slice's said between sentences."""
    content = "My dog is named Rex and he is 4 years old." + " " * 8 + "Then words " * 8
    for rule in (WHITESPACE_CUT, SENTENCE_CUT):
        parts = [transcript.sliced(content, 50, n, rule=rule) for n in range(2)]
        assert parts[0].endswith(f" {transcript.CUT}") and parts[1].startswith(f"{transcript.CUT} ")


def test_sentence_cut_slices_hold_all_the_text_once_in_order_within_the_bound() -> None:
    rng = random.Random(250)
    for _ in range(300):
        content = "".join(
            rng.choice([SENTENCE, "word ", "and ", "Yes! ", "x" * rng.randint(1, 60), "\n"])
            for _ in range(rng.randint(1, 80))
        )
        budget = rng.randint(8, 200)
        cuts = spans(content, budget, rule=SENTENCE_CUT)
        assert all(0 < b - a <= budget for a, b in cuts) or content == ""
        # Only whitespace between two slices, none before the first or after the last.
        gaps = zip([0, *(b for _, b in cuts)], [*(a for a, _ in cuts), len(content)], strict=True)
        assert all(content[b:a].isspace() or b == a for b, a in gaps)


def test_an_old_window_is_cut_as_before_the_sentence_cut() -> None:
    """Same spans as the whitespace cut always gave, for any content and budget."""
    rng = random.Random(249)
    for _ in range(500):
        content = "".join(
            rng.choice([SENTENCE, "word ", "My dog is named Rex. ", "\t", "x" * rng.randint(1, 50)])
            for _ in range(rng.randint(0, 60))
        )
        budget = rng.randint(4, 300)
        assert spans(content, budget, rule=WHITESPACE_CUT) == spans_before_h250(content, budget)


def test_a_window_planned_before_the_sentence_cut_reads_as_the_whitespace_cut() -> None:
    """A payload of an older run has no ``slice_cut``; read tolerantly, it is the old rule, and
    a piece of it is shown as that run planned it (its part count, its text)."""
    fields = {
        "formation_id": "f",
        "session_id": "s",
        "agent_id": "eve",
        "after_seq": 0,
        "upto_seq": 1,
        "message_count": 1,
        "fact_scopes": ["user"],
        "reflection_scopes": ["session"],
        "slices": 3,
    }
    assert Window.model_validate(fields).slice_cut == WHITESPACE_CUT
    content = "".join(SENTENCE for _ in range(3)) + "My dog is named Rex and he is 4."
    old = spans(content, 100, rule=WHITESPACE_CUT)
    assert old == spans_before_h250(content, 100) != spans(content, 100, rule=CUT_RULE)
    for part, (start, end) in enumerate(old):
        shown = pieces.text(content, 100, part, rule=WHITESPACE_CUT)
        assert transcript.as_said(shown) == content[start:end]


async def test_an_old_windows_fragment_makes_no_fact_of_anyone(store: MemoryStore) -> None:
    """A window planned before the sentence cut is read as planned, its sentence across the
    bound in two: neither half makes a fact (memory/llm/heuristic.py), none the agent's."""
    settings = Settings(formation=FormationSettings(max_tokens_per_run=100))  # 400 characters
    content = SENTENCE * 9 + "Fine. " * 4 + "My dog is named Rex and he is 4 years old."
    assert spans(content, 400, rule=WHITESPACE_CUT)[0][1] == content.index(" Rex")
    said = MessageIn(message_id="m0", role="user", user_id="hana", content=content, created_at=T0)
    await store.record_messages("s1", "eve", [said], weights={}, chars_per_token=4.0, now=T0)
    deps = Deps(
        settings=settings, store=store, llm=HeuristicProvider(), embedder=WordHashEmbedder()
    )
    planned = await window.load_window(
        store, settings, FormationRequest(session_id="s1", agent_id="eve", force=True)
    )
    assert planned is not None and planned.slice_cut == CUT_RULE
    old = planned.model_copy(update={"slice_cut": WHITESPACE_CUT})
    for w in (old, planned):
        got = [(f.scope, f.content) for f in (await facts.extract_facts(deps, w)).facts]
        assert [c for s, c in got if s == "agent" or "Rex" in c or c.endswith("named")] == (
            [] if w is old else ["Hana's dog is named Rex and he is 4 years old."]
        ), got
