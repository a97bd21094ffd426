"""README (formation step 6): a new fact with the content of a fact a person deleted after it was
said does not bring it back; "told again after the delete, the fact comes back".

Alice's email was formed and deleted by hand. Her session goes on: one message said before the
delete states the email (not yet formed: a backlog), and one said AFTER the delete states it
again. Both land in one window. The fact does not come back: the window keeps "each text once",
the first (memory/pipeline/facts.py ~296), so the statement made after the delete is dropped
and the one made before it decides (the delete stands)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from client.management import MemoryManager
from memory.models import MessageIn
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts
from tests.harness import Harness, conversation, facts

EMAIL = "Alice's email is alice@acme.example"


async def test_told_again_after_the_delete_in_the_same_window_comes_back(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    manager = MemoryManager(h.store, h.embedder, h.settings)
    await h.record("s0", conversation(2, prefix="a"))
    h.llm.script("extract_facts", facts((EMAIL, "user"), sources=[1]))
    async with h.worker():
        await h.form("s0")
        [fact] = await h.all_facts()
        await h.record("s1", conversation(2, prefix="b", start=10))  # said before the delete
        await manager.delete_fact(fact.fact_id)
        after = MessageIn(
            message_id="c1", role="user", user_id="alice", content="My email is alice@acme.example",
            created_at=datetime.now(UTC),
        )  # fmt: skip
        await h.record("s1", [after])  # said after the delete: window message 3
        h.llm.script(
            "extract_facts",
            ExtractedFacts(
                facts=[
                    ExtractedFact(content=EMAIL, scope="user", speaker="alice", sources=[1]),
                    ExtractedFact(content=EMAIL, scope="user", speaker="alice", sources=[3]),
                ]
            ),
        )
        await h.form("s1")

    assert [f.content for f in await h.all_facts()] == [EMAIL]
