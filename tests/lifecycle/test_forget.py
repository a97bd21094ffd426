"""forget_user through the client, as a backend calls it: afterwards a search and a context hold
nothing of the user, no other user lost anything, and a formation that was running for the user
when they were forgotten writes nothing of them."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.ids import text_hash
from memory.llm.base import LLMRequest
from memory.prompts.decide_facts import FactDecision, FactDecisions
from memory.prompts.extract_facts import ExtractedFacts
from tests.harness import Harness, conversation, facts, reflections

ALICE_FACT = "Alice drinks green tea every morning"
BOB_FACT = "Bob drinks green tea at night"


async def _two_users(h: Harness) -> None:
    h.llm.script(
        "extract_facts",
        facts((ALICE_FACT, "user"), ("Eve answers in French", "agent"), sources=[1]),
    )
    h.llm.script("extract_reflections", reflections(user=["Alice is a morning person"]))
    h.llm.script("extract_facts", facts((BOB_FACT, "user"), speaker="bob", sources=[3]))
    h.llm.script("extract_reflections", reflections(user=["Bob is a night owl"], speaker="bob"))
    await h.record("s1", conversation(4))
    await h.record("s2", conversation(4, user="bob", prefix="b"))
    async with h.worker():
        await h.form("s1")
        await h.form("s2")


async def test_after_forget_search_and_context_hold_nothing_of_the_user(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await _two_users(h)
    bob_context = await h.memory.memory_context("eve", "s2", "bob")
    bob_search = await h.memory.search_facts("eve", "green tea", user_id="bob")
    assert "Bob is a night owl" in bob_context or BOB_FACT in bob_context
    before = await h.memory.search_facts("eve", "green tea morning", user_id="alice")
    assert ALICE_FACT in [hit.content for hit in before.hits]

    result = await h.memory.forget_user("eve", "alice")

    [counts] = result.agents
    assert (counts.agent_id, counts.facts, counts.sessions, counts.messages) == ("eve", 1, 1, 4)
    assert counts.reflections == 1
    # The time-skipping server has no search attributes to find executions by.
    assert result.workflow_executions_deleted is None
    # Alice comes back in a new session: her memory is empty, the agent's own is still there.
    await h.record("s3", conversation(1, prefix="n"))
    context = await h.memory.memory_context("eve", "s3", "alice")
    assert "Alice" not in context and "morning" not in context
    assert "Eve answers in French" in context
    # The same queries found Alice's fact before; the agent's fact is still found.
    queries = ["green tea morning", "Alice", "answers in French"]
    after = await h.memory.search_facts("eve", queries, user_id="alice")
    assert [hit.content for hit in after.hits] == ["Eve answers in French"]
    assert await h.store.get_session("s1") is None
    # Bob lost nothing.
    assert await h.memory.memory_context("eve", "s2", "bob") == bob_context
    again = await h.memory.search_facts("eve", "green tea", user_id="bob")
    assert [(x.fact_id, x.content) for x in again.hits] == [
        (x.fact_id, x.content) for x in bob_search.hits
    ]


async def test_a_formation_running_when_the_user_is_forgotten_writes_nothing_of_them(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(4))

    async def forget_meanwhile(_: LLMRequest) -> ExtractedFacts:
        # The window is loaded, the commit is still ahead: the erasure happens in between.
        await h.memory.forget_user("eve", "alice")
        return facts((ALICE_FACT, "user"), ("Eve answers in French", "agent"))

    h.llm.script("extract_facts", forget_meanwhile)
    h.llm.script("extract_reflections", reflections(user=["Alice is a morning person"]))
    async with h.worker():
        summary = await h.form("s1")

    assert summary.facts_added == 0
    assert await h.all_facts() == []
    assert await h.store.list_reflections(h.key("user"), include_absorbed=True) == []
    assert await h.store.list_reflections(h.key("agent"), include_absorbed=True) == []
    assert await h.store.get_session("s1") is None


async def test_after_forget_no_vector_of_a_restated_sentence_is_left(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A restatement is embedded to find its candidates, decided NONE, never stored: its vector
    used to stay in the embedding cache after the user was forgotten (an embedding can be read
    back towards its text)."""
    h = await Harness.create(time_env, tmp_path)
    restated = "Alice has green tea each morning"
    h.llm.script("extract_facts", facts((ALICE_FACT, "user"), sources=[1]))
    h.llm.script("extract_facts", facts((restated, "user"), sources=[1]))
    h.llm.script(
        "decide_facts",
        FactDecisions(
            decisions=[
                FactDecision(new_fact_index=0, event="NONE", existing_index=0, merged_text=None)
            ]
        ),
    )
    await h.record("s1", conversation(4))
    await h.record("s2", conversation(4, prefix="b"))
    async with h.worker():
        await h.form("s1")
        second = await h.form("s2")
    assert second.decisions == {"NONE": 1}

    await h.memory.forget_user("eve", "alice")

    model = h.deps.embedder.model
    hashes = [text_hash(t) for t in (ALICE_FACT, restated)]
    assert await h.store.get_embeddings(model, hashes) == {}


async def test_a_session_recorded_again_after_its_user_was_forgotten_forms_anew(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Forget deletes Alice's session whole; the agent's own memories of it stay. The backend then
    records a session under the same id: its seqs restart at 1, so its first window covers the
    same range as the first one's. It must form as any new session does: before, it took the
    ids of what the first one left, its fact was "already used" (the formation failed, and
    every later one) and its agent reflection was taken as already stored (dropped)."""
    h = await Harness.create(time_env, tmp_path)
    h.llm.script("extract_facts", facts(("Eve answers in French", "agent"), sources=[1]))
    h.llm.script("extract_reflections", reflections(agent=["Keep answers short"]))
    h.llm.script("extract_facts", facts(("Eve keeps a glossary of terms", "agent"), sources=[1]))
    h.llm.script("extract_reflections", reflections(agent=["Use metric units"]))
    await h.record("s1", conversation(4))
    async with h.worker():
        await h.form("s1")
        await h.memory.forget_user("eve", "alice")
        await h.record("s1", conversation(4, prefix="again"))
        again = await h.form("s1")

    assert again.facts_added == 1 and again.reflections_added == 1
    agent_facts = sorted(f.content for f in await h.all_facts() if f.scope == "agent")
    assert agent_facts == ["Eve answers in French", "Eve keeps a glossary of terms"]
    agent_memory = await h.store.list_reflections(h.key("agent"))
    assert sorted(r.content for r in agent_memory) == ["Keep answers short", "Use metric units"]
