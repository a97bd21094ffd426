"""A correction of a correction back to the first value, in one conversation: "I live in Berlin."
… "I live in Paris." … "Sorry, I live in Berlin." Alice lives in Berlin: the later statement wins
(README, decide_fact_changes: "Several new facts may change one stored fact (a correction of a
correction): they apply in the order said, each a version of that fact, the later statement
wins").

(h202) Observed before the fix: when the three messages are in one formation window the fact ends at Paris (formed in
three windows it ends at Berlin). The third statement has the text of the first, and the window's
facts keep "each text once", the FIRST (memory/pipeline/facts.py ~line 296: `if key in seen:
continue`, and the offline provider's own `known` set, memory/llm/heuristic.py ~281): the
repeat, the last word on the matter, is dropped with its message and time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.deps import Deps
from memory.embedding.local import LocalMiniLMEmbedder
from memory.llm.base import LLMRequest
from memory.llm.fact_decisions import decide_facts
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig, FactFilter, MessageIn
from memory.pipeline import commit, dedup, facts, window
from memory.pipeline.types import FormationRequest
from memory.prompts.decide_facts import DecideFactsInput, FactDecisions
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore
from tests.harness import Harness, conversation

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
SAID = ["I live in Berlin.", "I live in Paris.", "Sorry, I live in Berlin."]


async def test_offline_provider_one_window(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    embedder = LocalMiniLMEmbedder()
    deps = Deps(settings=Settings(), store=store, llm=HeuristicProvider(), embedder=embedder)
    messages = [
        MessageIn(
            message_id=f"m{i}",
            role="user",
            name="Alice",
            content=text,
            created_at=T0 + timedelta(minutes=i),
            user_id="alice",
        )
        for i, text in enumerate(SAID)
    ]
    await store.record_messages(
        "s1",
        "eve",
        messages,
        weights={"user": 1.0},
        chars_per_token=4.0,
        now=T0 + timedelta(hours=1),
    )
    w = await window.load_window(
        store, deps.settings, FormationRequest(session_id="s1", agent_id="eve", force=True)
    )
    assert w is not None
    new = (await facts.extract_facts(deps, w)).facts
    candidates = await facts.find_candidates(deps, w, new)
    decided = await dedup.decide(deps, w, new, candidates)
    await commit.commit(deps, w, new, decided.decisions, [], T0 + timedelta(hours=2))
    valid = [f.content for f in await store.list_facts(FactFilter(agent_id="eve", user_id="alice"))]
    await embedder.close()
    await store.close()
    assert valid == ["Alice lives in Berlin."], valid


def _offline_decision(request: LLMRequest) -> FactDecisions:
    assert isinstance(request.task_input, DecideFactsInput)
    return decide_facts(request.task_input)


async def test_a_model_listing_each_statement_through_the_workflow(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A model's extraction that lists the three statements, each citing its message (window
    messages 1, 3, 5 are Alice's); decisions by the offline rules (Paris UPDATEs Berlin)."""
    h = await Harness.create(time_env, tmp_path)
    h.llm.defaults["decide_facts"] = _offline_decision
    await h.record("s1", conversation(6))
    h.llm.script(
        "extract_facts",
        ExtractedFacts(
            facts=[
                ExtractedFact(content=c, scope="user", speaker="alice", sources=[n])
                for c, n in [
                    ("Alice lives in Berlin", 1),
                    ("Alice lives in Paris", 3),
                    ("Alice lives in Berlin", 5),
                ]
            ]
        ),
    )
    async with h.worker():
        await h.form("s1")
    [fact] = await h.all_facts()
    assert fact.content == "Alice lives in Berlin", (fact.content, fact.source_message_ids)
