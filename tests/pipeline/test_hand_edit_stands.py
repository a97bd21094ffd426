"""A person's correction of a fact (the memory page, PATCH …/facts/{id}, `mnemos facts edit`)
stands against what was said before it. A formation that reads messages said before the edit (a
backlog, a formation in flight, the cold job) and finds the text the person replaced does not
bring it back: not as a new fact beside the edit (a model's NONE of the edited fact, which the
rules would otherwise refuse as naming another value: dedup ``another_value``, or its ADD), nor as
the fact's text (an UPDATE: versions.said_before). Imported facts, which cite no messages, too.
Said after the edit, it is the user speaking again, and may change it. Run step by step as the
FormMemories workflow runs it, on a real SQLite store with the offline provider."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import BaseModel

from client.management import MemoryManager
from memory.ids import content_hash
from memory.llm.base import LLMRequest, LLMResult
from memory.llm.heuristic import HeuristicProvider
from memory.models import Fact, FactFilter
from memory.prompts.decide_facts import DecideFactsInput, FactDecision, FactDecisions
from tests.isolation.bench import T0, Bench, sqlite_bench

SAID = "My dog is called Rex."
OLD = "Alice's dog is called Rex."  # what the offline provider reads SAID as
NEW = "Alice's dog is called Max."


class _Decides(HeuristicProvider):
    """The offline provider, but its decision step answers ``event`` for each new fact: NONE
    (a repeat of its first candidate) or ADD, as a model may."""

    def __init__(self, event: str) -> None:
        self.event = event

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        result = await super().generate_structured(request, schema)
        shown = request.task_input
        if not isinstance(shown, DecideFactsInput) or self.event == "UPDATE":
            return result
        answer = FactDecisions(
            decisions=[
                FactDecision(
                    new_fact_index=new.index,
                    event=self.event,
                    existing_index=None
                    if self.event == "ADD"
                    else next(e.index for e in shown.existing if new.index in e.candidate_for),
                    merged_text=None,
                )
                for new in shown.new_facts
            ]
        )
        return LLMResult[M](value=schema.model_validate(answer.model_dump()), usage=result.usage)


async def _valid(bench: Bench) -> list[str]:
    facts = await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))
    return sorted(f.content for f in facts)


async def _edit(bench: Bench, fact: Fact, seconds: float) -> None:
    """A person corrects the dog's name, ``seconds`` after the bench's first message."""
    manager = MemoryManager(
        bench.store, bench.embedder, bench.settings, clock=lambda: T0 + timedelta(seconds=seconds)
    )
    await manager.edit_fact(fact.fact_id, NEW)


async def _formed(bench: Bench) -> Fact:
    await bench.say("eve", "s1", SAID, user_id="alice")
    await bench.form("s1", "eve")
    [fact] = await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))
    assert fact.content == OLD
    return fact


async def _imported(bench: Bench) -> Fact:
    """The fact as a mem0 import writes it: no formation, no messages, no said time."""
    batch = await bench.embedder.embed([OLD])
    fact = Fact(
        fact_id="mem0-1", agent_id="eve", user_id="alice", scope="user", content=OLD,
        hash=content_hash(OLD), embedding_model=batch.model,
        formed_at=T0 - timedelta(days=90), updated_at=T0 - timedelta(days=90),
    )  # fmt: skip
    assert (await bench.store.import_facts([fact], [batch.vectors[0]])).inserted == 1
    return fact


@pytest.mark.parametrize("source", ["formed", "imported"])
@pytest.mark.parametrize("event", ["NONE", "ADD", "UPDATE"])
async def test_the_text_a_person_replaced_said_before_the_edit_does_not_come_back(
    tmp_path: Path, source: str, event: str
) -> None:
    async with sqlite_bench(tmp_path) as bench:
        bench.llm = _Decides(event)
        fact = await (_formed(bench) if source == "formed" else _imported(bench))
        await _edit(bench, fact, 60)
        # A backlog: said a second after the first message, before the edit, formed after it.
        await bench.say("eve", "s2", SAID, user_id="alice")
        await bench.form("s2", "eve")

        assert await _valid(bench) == [NEW]
        context = await bench.memory.memory_context("eve", "s2", "alice")
        shown = context.split("<Facts>")[1]  # the session's reflections quote what was said
        assert "Max" in shown and "Rex" not in shown


@pytest.mark.parametrize("source", ["formed", "imported"])
@pytest.mark.parametrize("event", ["NONE", "UPDATE"])
async def test_the_text_said_again_after_the_edit_is_the_users_to_change(
    tmp_path: Path, source: str, event: str
) -> None:
    """The user names the dog Rex again after the person's correction: what they said now is
    kept (beside the edit, where the model called it a repeat; or as the fact's new text)."""
    async with sqlite_bench(tmp_path) as bench:
        bench.llm = _Decides(event)
        fact = await (_formed(bench) if source == "formed" else _imported(bench))
        await _edit(bench, fact, bench.clock + 0.5)  # after what was said so far
        await bench.say("eve", "s2", SAID, user_id="alice")  # said after the edit
        await bench.form("s2", "eve")

        assert OLD in await _valid(bench)
