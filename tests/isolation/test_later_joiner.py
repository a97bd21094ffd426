"""Session memory is read by whoever joins the session later: a private detail told while one
user was alone there is that user's memory, not the session's (memory/scopes.py). The public
MemoryClient, the offline provider, a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import BaseModel
from temporalio.testing import WorkflowEnvironment

from memory.deps import Deps
from memory.errors import MalformedOutputError
from memory.llm.base import LLMRequest, LLMResult
from memory.llm.heuristic import HeuristicProvider
from memory.model_check import CheckReport, form_session
from memory.models import AgentConfig, MessageIn
from memory.pipeline import commit, window
from memory.pipeline.types import FormationRequest, Window
from memory.reform import reform
from memory.scopes import place_reflection
from memory.settings import Scope
from tests import harness
from tests.harness import Harness
from tests.isolation.bench import T0, Bench, sqlite_bench

SECRET = "I was diagnosed with diabetes in March 2024 and I feel anxious about it."


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    async with sqlite_bench(tmp_path) as bench:
        yield bench


async def test_a_private_detail_told_alone_is_not_read_by_who_joins_later(bench: Bench) -> None:
    await bench.say("eve", "desk", SECRET, user_id="alice")
    await bench.say("eve", "desk", "Let us plan my week, please.", user_id="alice")
    await bench.form("desk", "eve")
    await bench.say("eve", "desk", "Hi, I am Bob, joining the chat.", user_id="bob")

    assert "diabetes" not in await bench.memory.memory_context("eve", "desk", "bob")
    # Still alice's: shown to her where she is alone, this session or the next.
    await bench.say("eve", "alice-2", "Hello again.", user_id="alice")
    assert "diabetes" in await bench.memory.memory_context("eve", "alice-2", "alice")


async def test_what_is_not_private_stays_the_sessions(bench: Bench) -> None:
    await bench.say("eve", "desk", "Let us plan the product launch for May.", user_id="alice")
    await bench.form("desk", "eve")
    await bench.say("eve", "desk", "Hi, I am Bob, joining the chat.", user_id="bob")

    session = (await bench.memory.memory_context("eve", "desk", "bob")).split("<SessionMemory>")
    assert "product launch" in session[1]


# --- A private detail that can be no one's user memory there: a guest's, or any while the agent's
# user memory is off. Nobody's memory is no reason to keep it for whoever joins next.


async def test_a_guests_private_detail_told_alone_is_not_read_by_who_joins_later(
    bench: Bench,
) -> None:
    await bench.say("eve", "desk", SECRET, user_id=None, name="Guest")
    await bench.say("eve", "desk", "Let us plan my week, please.", user_id=None, name="Guest")
    await bench.form("desk", "eve")
    await bench.say("eve", "desk", "Hi, I am Alice, joining the chat.", user_id="alice")

    context = await bench.memory.memory_context("eve", "desk", "alice")
    assert "diabetes" not in context
    assert "plan" in context.split("<SessionMemory>")[1]  # what is not private stays


async def test_with_user_memory_off_a_private_detail_told_alone_is_not_read_by_who_joins_later(
    tmp_path: Path,
) -> None:
    quiet = AgentConfig(agent_id="eve", name="Eve", user_memory_enabled=False)
    async with sqlite_bench(tmp_path, (quiet,)) as bench:
        await bench.say("eve", "desk", SECRET, user_id="alice")
        await bench.form("desk", "eve")
        await bench.say("eve", "desk", "Hi, I am Bob, joining the chat.", user_id="bob")

        assert "diabetes" not in await bench.memory.memory_context("eve", "desk", "bob")


async def test_a_private_detail_told_in_a_group_stays_the_sessions_everyone_there_heard_it(
    bench: Bench,
) -> None:
    await bench.say("eve", "desk", "Hi, I am Bob.", user_id="bob")
    await bench.form("desk", "eve")
    await bench.say("eve", "desk", SECRET, user_id="alice")
    await bench.form("desk", "eve")

    assert "diabetes" in await bench.memory.memory_context("eve", "desk", "bob")


@pytest.mark.parametrize(
    ("text", "group", "placed"),
    [
        (SECRET, False, None),
        (SECRET, True, "session"),
        (SECRET, None, "session"),  # a window of an older run: as that run placed it
        ("Wants to plan the week.", False, "session"),
    ],
)
def test_a_user_reflection_that_can_be_no_ones_is_dropped_only_where_one_person_told_it(
    text: str, group: bool | None, placed: str | None
) -> None:
    allowed: tuple[Scope, ...] = ("agent", "session")  # a guest's window: no user memory
    assert place_reflection("user", None, None, allowed, text=text, group=group) == placed


# --- Someone joins before the formation ran: a window never spans the moment the session became
# a group (memory/group_start.py). Formation is thresholded (two short messages start none) and
# the cold job waits for idle minutes, so a second user often speaks before the first one's words
# are formed.


async def _alone_then_bob(bench: Bench) -> None:
    await bench.say("eve", "desk", SECRET, user_id="alice")
    await bench.say("eve", "desk", "Let us plan my week, please.", user_id="alice")
    await bench.say("eve", "desk", "Hi, I am Bob, joining the chat.", user_id="bob")


async def test_a_private_detail_told_alone_stays_hers_when_someone_joins_before_it_is_formed(
    bench: Bench,
) -> None:
    await _alone_then_bob(bench)
    await bench.form("desk", "eve")

    assert "diabetes" not in await bench.memory.memory_context("eve", "desk", "bob")
    await bench.say("eve", "alice-2", "Hello again.", user_id="alice")
    assert "diabetes" in await bench.memory.memory_context("eve", "alice-2", "alice")


async def test_forget_erases_it_though_the_session_became_a_group_before_it_was_formed(
    bench: Bench,
) -> None:
    await _alone_then_bob(bench)
    await bench.form("desk", "eve")
    await bench.store.forget_user("alice", agent_id="eve", at=T0 + timedelta(days=1))

    assert "diabetes" not in await bench.memory.memory_context("eve", "desk", "bob")


async def _windows(bench: Bench, session_id: str) -> list[Window]:
    """The windows formation reads, each committed empty (the cursor moves past it)."""
    request = FormationRequest(session_id=session_id, agent_id="eve", force=True)
    windows: list[Window] = []
    while (w := await window.load_window(bench.store, bench.settings, request)) is not None:
        windows.append(w)
        await commit.commit(bench.deps, w, [], [], [], T0 + timedelta(hours=1))
    return windows


async def test_a_window_ends_before_the_first_message_of_a_second_user(bench: Bench) -> None:
    await _alone_then_bob(bench)
    await bench.say("eve", "desk", "Welcome, Bob.", user_id="alice")

    alone, group = await _windows(bench, "desk")

    assert (alone.after_seq, alone.upto_seq, alone.user_id) == (0, 2, "alice")
    assert "user" in alone.fact_scopes and alone.more_pending
    assert (group.after_seq, group.upto_seq, group.user_id) == (2, 4, None)
    assert "user" not in group.fact_scopes


async def test_a_guest_beside_a_user_makes_the_group_from_their_first_message(
    bench: Bench,
) -> None:
    await bench.say("eve", "lobby", "Hello, anyone here?", user_id=None, name="Guest")
    await bench.say("eve", "lobby", "Hi, I am Alice.", user_id="alice")

    guest_alone, group = await _windows(bench, "lobby")

    assert (guest_alone.upto_seq, guest_alone.user_id, group.upto_seq) == (1, None, 2)
    assert "user" not in guest_alone.fact_scopes + group.fact_scopes


def _m(mid: str, text: str, user: str, minute: int) -> MessageIn:
    return MessageIn(
        message_id=mid, role="user", user_id=user, name=user.capitalize(), content=text,
        created_at=harness.T0 + timedelta(minutes=minute),
    )  # fmt: skip


async def test_the_workflow_keeps_it_hers_when_the_trigger_waited_until_someone_joined(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    h.llm = HeuristicProvider()  # type: ignore[assignment]  # the offline one of `make run`
    async with h.worker():
        await h.memory.record_messages("eve", "desk", [_m("a1", SECRET, "alice", 0)])
        assert not (await h.memory.maybe_form_memories("eve", "desk")).started  # thresholds
        joined = _m("b1", "Hi, I am Bob, joining the chat.", "bob", 5)
        await h.memory.record_messages("eve", "desk", [joined])
        await h.form("desk")  # the next trigger, the cold job or an end

    assert "diabetes" not in await h.memory.memory_context("eve", "desk", user_id="bob")


class BrokenReflections(HeuristicProvider):
    """The offline model, except that its reflection step always answers cut off."""

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        if request.task == "extract_reflections":
            raise MalformedOutputError("output hit the token limit (finish_reason=length)")
        return await super().generate_structured(request, schema)


async def test_a_reform_across_the_join_reforms_what_was_said_alone_alone(bench: Bench) -> None:
    await bench.say("eve", "desk", SECRET, user_id="alice")
    await bench.say("eve", "desk", "Hi, I am Bob, joining the chat.", user_id="bob")
    broken = Deps(bench.settings, bench.store, BrokenReflections(), bench.embedder)
    report = CheckReport()
    await form_session(broken, "eve", "desk", report)
    assert len(report.degraded) == 2  # each window's reflections: none stored

    # Both windows' records: one range, re-formed in one part unless cut at bob's message.
    await reform(bench.deps, "eve", "desk", 0, 2, with_reflections=True)

    assert "diabetes" not in await bench.memory.memory_context("eve", "desk", "bob")
    await bench.say("eve", "alice-2", "Hello again.", user_id="alice")
    assert "diabetes" in await bench.memory.memory_context("eve", "alice-2", "alice")
