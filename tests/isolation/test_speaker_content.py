"""A speaker's personal content never reaches agent memory, which every user of the agent reads,
whatever the model wrote: not through a merged text of an UPDATE, not under the name she gave
herself or her id spells, not as a statement whose subject the model left out (memory/scopes.py,
memory/privacy.py, memory/pipeline/dedup.py). Real workflows, a real SQLite store, a scripted
model writing what a model may write."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.llm.base import LLMRequest
from memory.models import MessageIn, Role
from memory.prompts.decide_facts import DecideFactsInput, FactDecision, FactDecisions
from tests.harness import T0, Harness, facts

CLINIC = "The clinic opens at 9 am on weekdays"
HER_MERGE = f"{CLINIC}, where the user gets her diabetes treatment"


def _msg(
    mid: str, text: str, user: str | None, minute: int, role: Role = "user", name: str | None = None
) -> MessageIn:
    return MessageIn(
        message_id=mid, role=role, user_id=user, name=name, content=text,
        created_at=T0 + timedelta(minutes=minute),
    )  # fmt: skip


async def _seen_by(h: Harness, user: str, query: str, minute: int = 30) -> str:
    """What another user of the agent reads: the context of a new session and a fact search."""
    await h.record(f"s-{user}", [_msg(f"{user}-1", "Hello", user, minute)])
    context = await h.memory.memory_context("eve", f"s-{user}", user_id=user)
    found = await h.memory.search_facts("eve", [query], session_id=f"s-{user}", user_id=user)
    return context + "\n".join(hit.content for hit in found.hits)


def _merge_into_the_clinic(merged: str) -> Callable[[LLMRequest], FactDecisions]:
    def decide(request: LLMRequest) -> FactDecisions:
        inp = request.task_input
        assert isinstance(inp, DecideFactsInput)
        [new] = inp.new_facts  # the agent fact: alice's own has no candidate (added by rule)
        [shown] = inp.existing
        return FactDecisions(
            decisions=[
                FactDecision(
                    new_fact_index=new.index,
                    event="UPDATE",
                    existing_index=shown.index,
                    merged_text=merged,
                )
            ]
        )

    return decide


async def _bob_then_alice(h: Harness, merged: str) -> None:
    """Bob states the clinic's hours; alice, alone, says them again with her treatment there,
    and the model merges her words into the agent's fact."""
    await h.record("s0", [_msg("b1", "The clinic opens at 9 am on weekdays.", "bob", 0)])
    h.llm.script("extract_facts", facts((CLINIC, "agent"), sources=[1]))
    said = "The clinic opens at 9 am, I get my diabetes treatment there."
    await h.record("s1", [_msg("a1", said, "alice", 10)])
    h.llm.script(
        "extract_facts",
        facts(
            ("The clinic opens at 9 am", "agent"),
            ("Alice gets diabetes treatment at the clinic", "user"),
            sources=[1],
        ),
    )
    h.llm.defaults["decide_facts"] = _merge_into_the_clinic(merged)
    h.llm.defaults["same_fact"] = {"same": False}
    async with h.worker():
        await h.form("s0")
        await h.form("s1")


async def test_a_merge_telling_a_users_private_detail_keeps_one_agent_fact_without_it(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await _bob_then_alice(h, HER_MERGE)

    assert "diabetes" not in await _seen_by(h, "carol", "clinic")
    agents = {f.content for f in await h.all_facts(user_id=None)}
    # The model's UPDATE stands in the new fact's own words, nothing of hers in agent memory,
    # and the clinic's hours are held once, not twice (h188).
    assert agents == {"The clinic opens at 9 am"}
    hers = {f.content for f in await h.all_facts() if f.scope == "user" and f.user_id == "alice"}
    assert hers == {"Alice gets diabetes treatment at the clinic"}


async def test_a_merge_of_the_clinics_own_words_still_updates_its_fact(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await _bob_then_alice(h, "On weekdays the clinic opens at 9 am, for every patient")

    agents = {f.content for f in await h.all_facts(user_id=None)}
    assert agents == {"On weekdays the clinic opens at 9 am, for every patient"}


@pytest.mark.parametrize(
    ("alice", "said"),
    [
        ("u-8f3a21", "Hi, I'm Alice Smith, CTO of Acme Robotics."),  # an opaque id, a name said
        ("u-8f3a21", "Hello. My name is Alice Smith and I am the CTO of Acme Robotics."),
        ("alice_smith", "I lead Acme Robotics as its CTO."),  # the id spells her name
        ("alice.smith", "I lead Acme Robotics as its CTO."),
        ("AliceSmith", "I lead Acme Robotics as its CTO."),
    ],
)
async def test_an_agent_item_naming_a_user_by_the_name_she_gave_or_her_id_spells_is_hers(
    time_env: WorkflowEnvironment, tmp_path: Path, alice: str, said: str
) -> None:
    """A backend that sends opaque ids and no display name: the model still calls her by name."""
    h = await Harness.create(time_env, tmp_path)
    await h.record(
        "s1",
        [
            _msg("m1", said, alice, 0),
            _msg("m2", "Nice to meet you!", None, 1, role="agent", name="Eve"),
        ],
    )
    h.llm.script(
        "extract_facts", facts(("Alice Smith is the CTO of Acme Robotics", "agent"), sources=[1])
    )
    async with h.worker():
        await h.form("s1")

    assert "Acme" not in await _seen_by(h, "u-77c0de", "Acme Robotics CTO")
    [hers] = await h.all_facts(user_id=alice)
    assert (hers.scope, hers.user_id) == ("user", alice)


async def test_a_name_said_of_a_business_is_nobodys_name(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Only an introduction gives a name: "This is Python code" names nobody "Python"."""
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", [_msg("m1", "This is Python code from our repo.", "u-8f3a21", 0)])
    h.llm.script(
        "extract_facts", facts(("Python 3.13 is the team's runtime", "agent"), sources=[1])
    )
    async with h.worker():
        await h.form("s1")

    assert "Python 3.13" in await _seen_by(h, "u-77c0de", "Python runtime")


@pytest.mark.parametrize(
    ("said", "item", "word"),
    [
        ("I am the CTO of Acme Robotics.", "Is the CTO of Acme Robotics", "Acme"),
        ("I earn 90000 dollars a year.", "Earns 90000 dollars a year", "90000"),
        ("I was born in 1990 in Porto.", "Was born in 1990 in Porto", "Porto"),
        ("I'm in therapy for depression.", "Is in therapy for depression", "depression"),
    ],
)
async def test_a_subjectless_agent_item_about_the_speaker_is_hers(
    time_env: WorkflowEnvironment, tmp_path: Path, said: str, item: str, word: str
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", [_msg("m1", said, "alice", 0)])
    h.llm.script("extract_facts", facts((item, "agent"), sources=[1]))
    async with h.worker():
        await h.form("s1")

    assert word not in await _seen_by(h, "carol", item)
    [hers] = await h.all_facts()
    assert (hers.content, hers.scope, hers.user_id) == (item, "user", "alice")


@pytest.mark.parametrize(
    "item",
    ["Opens at 9 am on weekdays", "Is open on Sundays until 2 pm", "Has a 30-day refund policy"],
)
async def test_a_subjectless_agent_item_about_the_business_stays_the_agents(
    time_env: WorkflowEnvironment, tmp_path: Path, item: str
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", [_msg("m1", f"The shop? {item}.", "alice", 0)])
    h.llm.script("extract_facts", facts((item, "agent"), sources=[1]))
    async with h.worker():
        await h.form("s1")

    assert item in await _seen_by(h, "carol", item)


@pytest.mark.parametrize(
    ("user", "fact"),
    [
        # An id of words: "mark_price" is no claim on the price list (h188).
        ("mark_price", "The price of the Pro plan is 20 dollars a month."),
        ("bill_jones", "The monthly bill is emailed on the first of the month."),
        # Subjectless, and the business's own: no person is "discontinued".
        ("u-42", "Was discontinued in 2022, replaced by the Pro plan."),
    ],
)
async def test_the_agents_own_statement_stays_agent_memory_whoever_asked(
    time_env: WorkflowEnvironment, tmp_path: Path, user: str, fact: str
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record(
        "s1",
        [
            _msg("m1", "Can you call me Monday about the plans?", user, 0),
            _msg("m2", fact, None, 1, role="agent", name="Eve"),
        ],
    )
    h.llm.script("extract_facts", facts((fact, "agent"), sources=[2]))
    async with h.worker():
        await h.form("s1")

    assert fact in await _seen_by(h, "carol", fact)
