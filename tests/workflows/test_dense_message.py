"""A single message within the formation budget but dense with facts (45 short sentences, each a
fact) is read again in halves when its extraction's answer overflows (the offline provider fails
beyond its bound) or fills it (a model's full answer), down to about a sentence; its facts, more
than one formation carries, are committed in passes, the last moving the cursor past it. Only a
piece too short to halve whose answer still overflows is passed over, visibly
(memory/pipeline/slices.py)."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError
from temporalio.testing import WorkflowEnvironment

from memory import transcript
from memory.errors import MalformedOutputError
from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.prompts.common import MAX_ITEMS
from memory.prompts.extract_facts import ExtractedFacts
from tests.fakes import transcript_of
from tests.harness import Harness, facts
from tests.workflows.test_long_message import _cursor, _history, _scheduled, add_all, said


def favourites(n: int) -> str:
    return " ".join(f"My favourite number {i} is {1000 + 7 * i}." for i in range(1, n + 1))


async def test_a_dense_message_within_the_budget_forms_every_fact(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    content = favourites(45)
    assert len(content) < h.settings.formation.max_chars_per_run  # one slice, one window
    await h.record("s1", [said(content)])
    async with h.worker():
        summary = await h.form("s1")
        history = await _history(h)

    formed = {f.content for f in await h.all_facts() if f.invalidated_at is None}
    assert formed == {f"Alice's favourite number {i} is {1000 + 7 * i}." for i in range(1, 46)}
    assert all(f.source_message_ids == ("m0",) for f in await h.all_facts())
    assert summary.degraded == [] and summary.passed_over == 0
    assert summary.halved >= 1 and summary.passes == 1  # 45 facts: two passes, 23 and 22
    assert (summary.formations, summary.messages_formed) == (2, 1)
    assert "dense piece(s) read in halves" in str(summary.memo()["summary"])
    # The whole message first, then its halves, each its own activity.
    assert [args[1:] for args in _scheduled(history, "extract_facts")][:3] == [
        [],
        [0, [0]],
        [0, [1]],
    ]
    assert len(_scheduled(history, "commit_formation")) == 2
    assert await _cursor(h) == 1
    assert await h.store.list_degraded(agent_id="eve", session_id="s1") == []


def up_to_the_bound(request: LLMRequest) -> ExtractedFacts:
    """A model that answers a fact per code word shown, at most its bound: a full answer."""
    shown = " ".join(m.content for m in transcript_of(request))
    words = re.findall(r"\bCODE\d+", shown)[:MAX_ITEMS]
    return facts(*[(f"Alice's code word is {w}", "user") for w in words], sources=[1])


def codes(n: int) -> str:
    return " ".join(f"My code word is CODE{i:02d}." for i in range(1, n + 1))


async def test_a_model_answer_filling_its_bound_for_one_message_reads_it_in_halves(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    h.llm.defaults["extract_facts"] = up_to_the_bound
    h.llm.defaults["decide_facts"] = add_all
    content = codes(50)
    await h.record("s1", [said(content)])
    async with h.worker():
        summary = await h.form("s1")
        history = await _history(h)

    assert {f.content for f in await h.all_facts()} == {
        f"Alice's code word is CODE{i:02d}" for i in range(1, 51)
    }
    first, *halves = h.llm.calls("extract_facts")
    assert [m.content for m in transcript_of(first)] == [content]
    shown = [transcript_of(r)[0].content for r in halves]
    assert len(shown) == 2 and shown[0].endswith(transcript.CUT)
    assert shown[1].startswith(transcript.CUT)
    assert [args[1:] for args in _scheduled(history, "extract_facts")] == [[], [0, [0]], [0, [1]]]
    assert summary.passed_over == 0 and summary.halved == 1 and summary.passes == 1
    assert await _cursor(h) == 1


def overflowing(request: LLMRequest) -> ExtractedFacts:
    """An answer that fails its schema for too many facts wherever FLOOD is shown."""
    shown = " ".join(m.content for m in transcript_of(request))
    if "FLOOD" in shown:
        many = [{"content": f"fact {i}", "scope": "user", "speaker": "alice"} for i in range(41)]
        try:
            ExtractedFacts.model_validate({"facts": many})
        except ValidationError as e:
            raise MalformedOutputError("output does not fit the schema") from e
    return up_to_the_bound(request)


async def test_only_a_piece_too_short_to_halve_that_still_overflows_is_passed_over(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    h.llm.defaults["extract_facts"] = overflowing
    h.llm.defaults["decide_facts"] = add_all
    content = f"{codes(20)} FLOOD. {codes(40)[len(codes(20)) + 1 :]}"
    await h.record("s1", [said(content)])
    async with h.worker():
        summary = await h.form("s1")

    kept = {f.content for f in await h.all_facts()}
    # The pieces around the one that overflows at the least size are formed.
    assert {"Alice's code word is CODE01", "Alice's code word is CODE40"} <= kept
    assert len(kept) >= 30
    [over] = summary.degraded
    assert over.step == "extract_facts" and summary.passed_over == 1
    assert over.reason.startswith("slice 1 of 1, half ")
    [record] = await h.store.list_degraded(agent_id="eve", session_id="s1")
    assert (record.step, record.after_seq, record.upto_seq) == ("extract_facts", 0, 1)
    assert await _cursor(h) == 1
