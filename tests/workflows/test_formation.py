"""FormMemories on the time-skipping server: every branch of the pipeline, with what a user would check
afterwards in the store (facts, history, buffers, cursor) rather than how the code got there."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.llm.base import LLMRequest
from memory.models import AgentConfig, MessageIn
from memory.prompts.consolidate import ConsolidatedSections, ConsolidateInput
from memory.prompts.decide_facts import FactDecision, FactDecisions
from memory.settings import FactSettings, ReflectionSettings
from tests.fakes import consolidated, facts_input, reflections_input
from tests.harness import T0, Harness, conversation, facts, reflections

# Every bench here runs on SQLite and on PostgreSQL.
pytestmark = pytest.mark.usefixtures("store_backend")


def decision(
    new: int, event: str, existing: int | None = None, text: str | None = None
) -> FactDecision:
    return FactDecision(new_fact_index=new, event=event, existing_index=existing, merged_text=text)


async def seeded(env: WorkflowEnvironment, tmp_path: Path, existing: str) -> Harness:
    """A harness whose store already holds one user fact, formed from session s0."""
    h = await Harness.create(env, tmp_path)
    await h.record("s0", conversation(4, prefix="a"))
    h.llm.script("extract_facts", facts((existing, "user")))
    async with h.worker():
        await h.form("s0")
    return h


async def test_no_candidate_facts_are_added_without_a_decision_call(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice's email is alice@example.com", "user")))
    async with h.worker():
        summary = await h.form("s1")
    assert summary.facts_added == 1
    assert h.llm.calls("decide_facts") == []
    assert summary.embedding_calls == 1  # every new fact embedded in one call
    assert [len(c) for c in h.embedder.calls] == [1]


async def test_update_keeps_history_and_bumps_version(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await seeded(time_env, tmp_path, "Alice works at Acme Robotics")
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics as CTO", "user")))
    h.llm.script(
        "decide_facts",
        FactDecisions(decisions=[decision(0, "UPDATE", 0, "Alice works at Acme Robotics as CTO")]),
    )
    async with h.worker():
        summary = await h.form("s1")
    assert summary.facts_updated == 1 and summary.facts_added == 0
    [fact] = await h.all_facts()
    assert fact.content == "Alice works at Acme Robotics as CTO"
    assert fact.version == 2
    assert fact.previous_content == "Alice works at Acme Robotics"
    assert [r.content for r in fact.history] == ["Alice works at Acme Robotics"]


async def test_delete_invalidates_the_old_fact_and_adds_the_new(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await seeded(time_env, tmp_path, "Alice likes pizza very much")
    old = (await h.all_facts())[0]
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice no longer likes pizza very much", "user")))
    h.llm.script("decide_facts", FactDecisions(decisions=[decision(0, "DELETE", 0)]))
    async with h.worker():
        summary = await h.form("s1")
    assert summary.facts_invalidated == 1 and summary.facts_added == 1
    # A DELETE stores the new fact as said: only an UPDATE may carry a merged text.
    assert [f.content for f in await h.all_facts()] == ["Alice no longer likes pizza very much"]
    [kept] = await h.store.get_facts([old.fact_id])
    assert kept.invalidated_at is not None and kept.invalidated_by is not None


async def test_none_writes_nothing_for_that_fact(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await seeded(time_env, tmp_path, "Alice lives in Lisbon Portugal")
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice lives in Lisbon", "user")))
    h.llm.script("decide_facts", FactDecisions(decisions=[decision(0, "NONE", 0)]))
    async with h.worker():
        summary = await h.form("s1")
    assert summary.decisions == {"NONE": 1}
    assert [(f.content, f.version) for f in await h.all_facts()] == [
        ("Alice lives in Lisbon Portugal", 1)
    ]


async def test_a_change_of_a_fact_never_shown_changes_nothing_and_keeps_the_new_fact(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The model named index 7, which no fact has: nothing is guessed, nothing retried (a small
    model named the same again when asked again); the new fact is added, the stored one kept."""
    h = await seeded(time_env, tmp_path, "Alice works at Acme Robotics")
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics as CTO", "user")))
    h.llm.script(
        "decide_facts", FactDecisions(decisions=[decision(0, "UPDATE", 7, "invented target")])
    )
    async with h.worker():
        await h.form("s1")
    assert len(h.llm.calls("decide_facts")) == 1
    assert sorted(f.content for f in await h.all_facts()) == [
        "Alice works at Acme Robotics",
        "Alice works at Acme Robotics as CTO",
    ]


async def test_a_decision_for_a_fact_not_asked_about_is_rejected_and_retried(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await seeded(time_env, tmp_path, "Alice works at Acme Robotics")
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics as CTO", "user")))
    h.llm.script(
        "decide_facts",
        FactDecisions(decisions=[decision(3, "ADD", None, None)]),  # new fact 3 was never shown
        FactDecisions(decisions=[decision(0, "UPDATE", 0, "Alice works at Acme Robotics as CTO")]),
    )
    async with h.worker():
        await h.form("s1")
    assert len(h.llm.calls("decide_facts")) == 2
    assert [f.content for f in await h.all_facts()] == ["Alice works at Acme Robotics as CTO"]


async def test_user_memory_toggle_off_writes_no_user_scope(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.store.upsert_agent(AgentConfig(agent_id="eve", name="Eve", user_memory_enabled=False))
    await h.record("s1", conversation(4))
    h.llm.script(
        "extract_facts",
        facts(("Alice's email is a@example.com", "user"), ("Festival budget is $50,000", "agent")),
    )
    h.llm.script(
        "extract_reflections",
        reflections(agent=["Festival planning"], user=["Alice likes bullets"], session=["venue"]),
    )
    async with h.worker():
        await h.form("s1")
    # The prompt offers every scope (#11): which are kept is decided after the answer.
    assert facts_input(h.llm.calls("extract_facts")[0]).task == "extract_facts"
    assert [f.scope for f in await h.all_facts()] == ["agent"]
    assert await h.buffered(h.key("user")) == []
    # The personal reflection stays in this session, never in agent memory.
    session = [r.content for r in await h.buffered(h.key("session"))]
    assert sorted(session) == ["Alice likes bullets", "venue"]
    assert "Alice likes bullets" not in [r.content for r in await h.buffered(h.key("agent"))]


async def test_group_chat_turns_user_memory_off(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    # bob first: alice speaks in the group (what he said before she came forms alone, in a
    # window of its own: memory/group_start.py; its answers are empty).
    msgs = [
        MessageIn(
            message_id="b1", role="user", content="hi from bob", created_at=T0, user_id="bob"
        ),
        *conversation(4),
    ]
    await h.record("s1", msgs)
    h.llm.script("extract_facts", facts(), facts(("Alice's email is a@example.com", "user")))
    h.llm.script(
        "extract_reflections",
        reflections(),
        reflections(user=["Alice likes bullets"], session=["group planning"]),
    )
    async with h.worker():
        await h.form("s1")
    assert await h.all_facts() == []
    assert "user" not in reflections_input(h.llm.calls("extract_reflections")[1]).scopes
    assert (
        await h.buffered(h.key("user")) == [] and await h.buffered(h.key("user", user="bob")) == []
    )
    # alice's personal reflection stays in the group session, never in agent memory (#11).
    session = [r.content for r in await h.buffered(h.key("session"))]
    assert sorted(session) == ["Alice likes bullets", "group planning"]
    assert await h.buffered(h.key("agent")) == []


async def test_session_buffer_at_threshold_is_consolidated(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(4))
    h.llm.script(
        "extract_reflections",
        reflections(session=["one thing", "two things", "three things", "four things"]),
    )
    async with h.worker():
        summary = await h.form("s1")
        assert summary.consolidations_requested == [h.key("session").key]
        result = await h.consolidation_result(h.key("session"))
    assert result.consolidations == 1 and result.absorbed == 4
    blob = await h.store.get_consolidated(h.key("session"))
    assert blob is not None and blob.version == 1 and blob.content.startswith("VERSION: 1")
    assert await h.buffered(h.key("session")) == []


def newer_language_wins(request: LLMRequest) -> ConsolidatedSections:
    """A model that keeps one preference about the answers' language: the newest."""
    p = request.task_input
    assert isinstance(p, ConsolidateInput)
    kept = [line[2:] for line in p.current_content.splitlines() if line.startswith("- ")]
    if any("answers in" in r for r in p.reflections):
        kept = [k for k in kept if "answers in" not in k]
    return consolidated(*kept, *p.reflections)


async def test_a_preference_changed_back_reaches_the_users_memory(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=1))
    h.llm.defaults["consolidate"] = newer_language_wins
    said = ["French", "English", "French"]  # the third in the words the first was absorbed in
    for n, language in enumerate(said):
        await h.record("s1", conversation(2, start=2 * n))
        h.llm.script("extract_reflections", reflections(user=[f"Prefers answers in {language}"]))
        async with h.worker():
            await h.form("s1")
            await h.consolidation_result(h.key("user"))

    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None and blob.version == 3
    assert "Prefers answers in French" in blob.content and "English" not in blob.content


# Over the session blob's word limit (200, and its tolerance).
TOO_LONG = consolidated(*(f"point {i} " + "word " * 12 for i in range(20)))


@pytest.mark.parametrize(
    "bad",
    [
        consolidated(),
        consolidated("  ", "- "),
        TOO_LONG,
    ],
    ids=["no-items", "blank-items", "over-limit"],
)
async def test_invalid_consolidation_output_never_replaces_the_blob(
    time_env: WorkflowEnvironment, tmp_path: Path, bad: ConsolidatedSections
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(4))
    h.llm.script(
        "extract_reflections", reflections(session=["a one", "b two", "c three", "d four"])
    )
    h.llm.defaults["consolidate"] = bad
    async with h.worker():
        await h.form("s1")
        # Degraded, not failed: the fallback keeps the buffer for a later run (issue #12).
        result = await h.consolidation_result(h.key("session"))
    assert result.degraded is not None and result.consolidations == 0
    assert await h.store.get_consolidated(h.key("session")) is None
    assert len(await h.buffered(h.key("session"))) == 4  # the buffer is intact
    # Rejected the same way twice: no retry changes it, so each draft stops at its second
    # answer. The buffer is then split, as a formation splits its window, within a budget of
    # 2 * log2(4) + 1 parts ("d" waits for the next request); an unusable answer is not a
    # reason to set a reflection aside (only a refusal of its text is).
    drafts = ["abcd", "ab", "a", "b", "cd", "c"]
    assert len(h.llm.calls("consolidate")) == 2 * len(drafts)
    assert result.set_aside == []


async def test_invalid_consolidation_is_retried_until_valid(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(4))
    h.llm.script(
        "extract_reflections", reflections(session=["a one", "b two", "c three", "d four"])
    )
    # Rejected for two different reasons (the same one twice would mean no retry can fix it).
    h.llm.script("consolidate", consolidated(), TOO_LONG)
    async with h.worker():
        await h.form("s1")
        await h.consolidation_result(h.key("session"))
    blob = await h.store.get_consolidated(h.key("session"))
    assert blob is not None and blob.version == 1
    assert len(h.llm.calls("consolidate")) == 3


async def test_a_repeated_fact_is_dropped_and_one_over_the_word_limit_kept(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The word limit is asked of the model, not enforced by dropping what it wrote: a fact
    that says more is still what was said (seeds audit D4: it was dropped without a trace)."""
    h = await Harness.create(
        time_env,
        tmp_path,
        facts=FactSettings(max_words=10),
        reflections=ReflectionSettings(),
    )
    await h.record("s1", conversation(4))
    long = (
        "Alice moved from Porto to Lisbon in 2019 for a job at Acme Robotics, where she now "
        "leads the robotics team of twelve engineers"
    )
    h.llm.script(
        "extract_facts",
        facts(
            ("Alice lives in Lisbon", "user"), ("alice lives in lisbon.", "user"), (long, "user")
        ),
    )
    async with h.worker():
        summary = await h.form("s1")
    assert summary.facts_extracted == 2
    assert sorted(f.content for f in await h.all_facts()) == ["Alice lives in Lisbon", long]


async def test_with_agent_memory_off_a_users_fact_is_not_dropped_as_a_hidden_agent_facts_repeat(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Agent facts formed while agent memory was on stay stored but hidden once it is off: a
    user's statement of the same words must be kept as theirs, not decided "already known"
    against a fact nobody is shown (seeds audit D3)."""
    h = await Harness.create(time_env, tmp_path)
    shared = "The Lisbon office address is Rua Augusta 10"
    await h.record("s0", conversation(4, prefix="a"))
    h.llm.script("extract_facts", facts((shared, "agent")))
    async with h.worker():
        await h.form("s0")
    h.agent = h.agent.model_copy(update={"agent_memory_enabled": False})
    await h.store.upsert_agent(h.agent)
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts((shared, "user")))
    async with h.worker():
        summary = await h.form("s1")

    assert (summary.facts_added, summary.facts_duplicate) == (1, 0)
    hers = [f for f in await h.all_facts(user_id="alice") if f.scope == "user"]
    assert [(f.content, f.user_id) for f in hers] == [(shared, "alice")]


@pytest.mark.parametrize("event", ["UPDATE", "DELETE"])
async def test_a_users_fact_never_changes_the_agents_memory(
    time_env: WorkflowEnvironment, tmp_path: Path, event: str
) -> None:
    """A user's new fact meets the agent's facts among its candidates (scopes.dedup_filter), and
    a model may answer UPDATE or DELETE of one: the first would write the user's words into the
    memory every user of the agent reads, the second take that fact from every user. Refused:
    the user's fact is added as theirs, the agent's stays."""
    h = await Harness.create(time_env, tmp_path)
    shared = "The office cafe is Blue Bottle on Main Street"
    await h.record("s0", conversation(4, prefix="a"))
    h.llm.script("extract_facts", facts((shared, "agent")))
    async with h.worker():
        await h.form("s0")
    await h.record("s1", conversation(4))
    hers = "Alice's favourite cafe is Blue Bottle on Main Street"
    h.llm.script("extract_facts", facts((hers, "user")))
    h.llm.script("decide_facts", FactDecisions(decisions=[decision(0, event, 0, hers)]))
    async with h.worker():
        summary = await h.form("s1")

    assert len(h.llm.calls("decide_facts")) == 1  # the model met the agent fact and answered
    assert [f.content for f in await h.all_facts(user_id=None)] == [shared]  # everyone's view
    assert sorted((f.content, f.scope) for f in await h.all_facts()) == [
        (hers, "user"),
        (shared, "agent"),
    ]
    assert (summary.facts_updated, summary.facts_invalidated, summary.facts_added) == (0, 0, 1)
