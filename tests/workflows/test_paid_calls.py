"""A formation's summary reports every model call its steps paid for (activities/paid.py): the
answers an attempt had rejected, and those of a step that failed and was halved, passed over or
degraded, not only the answers the steps used. Its `llm_calls` is published as cost
(bench/locomo_quality/stack.py): counting only the used answers under-reported it."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel
from temporalio.testing import WorkflowEnvironment

from memory.errors import MalformedOutputError
from memory.llm.base import LLMRequest, LLMResult
from memory.llm.heuristic import HeuristicProvider
from memory.llm_usage import Usage
from memory.prompts.decide_facts import FactDecision, FactDecisions
from memory.settings import ReflectionSettings
from runtime.starts import request_consolidation
from tests.fakes import consolidated
from tests.harness import Harness, conversation, facts, reflections
from tests.workflows.test_dense_message import dense
from tests.workflows.test_formation import seeded
from tests.workflows.test_long_message import said
from workflows.summary import FormationSummary

CUT_OFF = Usage(provider="scripted", model="m", input_tokens=512, output_tokens=77)


def _cut_off(request: LLMRequest) -> None:
    """An answer the provider returned and billed, not valid JSON."""
    raise MalformedOutputError("output is not JSON", provider="scripted", usage=CUT_OFF)


def _tasks(summary: FormationSummary, task: str) -> int:
    return len([c for c in summary.llm_calls if c.task == task])


async def test_a_malformed_answer_retried_into_a_good_one_counts_both_calls(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", _cut_off, facts(("Alice's email is alice@example.com", "user")))
    async with h.worker():
        summary = await h.form("s1")

    assert summary.facts_added == 1 and summary.degraded == []
    asked = h.llm.calls("extract_facts")
    assert len(asked) >= 2 and asked[1].attempt == 2  # the step's second attempt answered
    # Each answer once: the rejected one (with what its provider billed), the used one, and
    # any second look the used one led to.
    assert _tasks(summary, "extract_facts") == len(asked)
    [rejected] = [c for c in summary.llm_calls if c.output_tokens == CUT_OFF.output_tokens]
    assert (rejected.task, rejected.input_tokens) == ("extract_facts", CUT_OFF.input_tokens)
    assert summary.memo()["tokens_out"] == sum(c.output_tokens for c in summary.llm_calls)


async def test_decisions_that_stay_invalid_count_every_answer_of_the_failed_step(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Answered twice, rejected the same way twice: the step fails, its fallback adds the facts
    undecided, and both answers were paid for."""
    h = await seeded(time_env, tmp_path, "Alice works at Acme Robotics")
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics as CTO", "user")))
    h.llm.defaults["decide_facts"] = FactDecisions(
        decisions=[
            FactDecision(new_fact_index=4, event="UPDATE", existing_index=0, merged_text="x")
        ]
    )
    async with h.worker():
        summary = await h.form("s1")

    [step] = summary.degraded
    assert step.step == "decide_fact_changes"
    assert len(h.llm.calls("decide_facts")) == 2
    assert _tasks(summary, "decide_facts") == 2


class _Counting(HeuristicProvider):
    """The offline provider, counting the requests it answered (rejected answers included)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        self.asked.append(request.task)
        return await super().generate_structured(request, schema)


async def test_a_dense_message_counts_the_extractions_of_the_pieces_that_failed(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """90 facts on the offline provider: the whole message and both its halves answer more than
    an answer carries (rejected, not retried: deterministic), its four quarters answer. Seven
    calls; the summary listed the four whose answers were kept."""
    h = await Harness.create(time_env, tmp_path)
    llm = _Counting()
    h.llm = llm  # type: ignore[assignment]
    await h.record("s1", [said(dense(90))])
    async with h.worker():
        summary = await h.form("s1")

    assert len(await h.all_facts()) == 90 and summary.pieces_read == 4
    assert llm.asked.count("extract_facts") == 7
    assert _tasks(summary, "extract_facts") == 7
    # The rejected ones read their prompt and wrote no answer.
    assert len([c for c in summary.llm_calls if c.output_tokens == 0]) == 3


async def test_a_draft_that_stays_unusable_counts_its_answers(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=9))
    await h.record("s1", conversation(4))
    h.llm.script("extract_reflections", reflections(user=["w"]))
    async with h.worker():
        await h.form("s1")
        h.llm.defaults["consolidate"] = consolidated()  # no items: rejected, the same way
        handle = await request_consolidation(h.client, h.settings, h.key("user"), force=True)
        summary = await handle.result()

    assert summary.consolidations == 0 and summary.degraded is not None
    assert len(h.llm.calls("consolidate")) == 2
    assert [c.task for c in summary.llm_calls] == ["consolidate", "consolidate"]
