"""A sentence across a slice's bound (r249). A long user message is read in slices; cut at a
whitespace, "My dog is named Rex and he is 4 years old." was read as "My dog is named" and
"Rex and he is 4 years old.": with the offline rules of `make run`, the second half had no "my"
and became the AGENT's fact, which every user of the agent reads (frank did), and the speaker
kept no fact of her dog. Slices are now cut at a sentence end (memory/transcript.py spans), and
a fragment a slice still shows makes no fact (memory/llm/heuristic.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory import transcript
from memory.llm.heuristic import HeuristicProvider
from memory.models import FactFilter, MessageIn
from memory.settings import FormationSettings
from tests.harness import T0, Harness

BUDGET_TOKENS = 100  # 400 characters a slice
FILLER = "".join(f"Round {i} of the lamp check was fine. " for i in range(30))
DOG = "My dog is named Rex and he is 4 years old."


def said(mid: str, user: str, content: str, minute: int) -> MessageIn:
    return MessageIn(
        message_id=mid,
        role="user",
        user_id=user,
        content=content,
        created_at=T0 + timedelta(minutes=minute),
    )


def across_the_bound() -> str:
    """A message whose whitespace cut (the rule before) falls inside DOG."""
    head = FILLER[: FILLER.rindex(". ", 0, 380) + 1]
    head += " Fine." * ((398 - len(head) - len(" My dog is")) // 6)
    content = f"{head} {DOG} {FILLER[:300]}"
    first_end = transcript.spans(content, 400, rule=transcript.WHITESPACE_CUT)[0][1]
    assert content.index(DOG) < first_end < content.index(DOG) + len(DOG)
    return content


async def test_a_sentence_across_a_slice_bound_stays_its_speakers(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(
        time_env, tmp_path, formation=FormationSettings(max_tokens_per_run=BUDGET_TOKENS)
    )
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    async with h.worker():
        await h.record("s-hana", [said("h1", "hana", across_the_bound(), 0)])
        await h.form("s-hana")
        await h.record("s-frank", [said("f1", "frank", "Hello there.", 10)])
        frank = await h.memory.memory_context("eve", "s-frank", user_id="frank")

    facts = await h.store.list_facts(FactFilter(agent_id="eve", user_id="hana"), limit=100)
    about_rex = [(f.scope, f.user_id, f.content) for f in facts if "Rex" in f.content]
    assert about_rex == [("user", "hana", "Hana's dog is named Rex and he is 4 years old.")]
    assert not [f.content for f in facts if f.content.rstrip(".").endswith("named")]
    assert "Rex" not in frank
