"""A user forgotten while a formation of their group chat runs: nothing of theirs is written, and
the other users' messages of that window are still formed (in the same run), from a transcript
read again without the forgotten user's messages."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.llm.base import LLMRequest
from memory.models import MessageIn
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts
from memory.settings import FormationSettings
from tests.fakes import facts_input
from tests.harness import T0, FirstExtractionGate, Harness

ALICE = "The printer on floor 3 is broken"
BOB = "Our office moves to Oslo in May"


def _message(n: int, user: str, content: str) -> MessageIn:
    return MessageIn(
        message_id=f"g{n}",
        role="user",
        content=content,
        created_at=T0 + timedelta(minutes=n),
        user_id=user,
    )


class _EveryMessageAFact(FirstExtractionGate):
    """An agent fact of each message, citing it; the first call held until released."""

    async def __call__(self, request: LLMRequest) -> ExtractedFacts:
        await super().__call__(request)
        return ExtractedFacts(
            facts=[
                ExtractedFact(content=m.content, scope="agent", sources=[n])
                for n, m in enumerate(facts_input(request).messages, start=1)
            ]
        )


async def test_a_user_forgotten_during_formation_leaves_the_others_messages_formed(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    gate = _EveryMessageAFact()
    await h.record("g", [_message(0, "carol", "Hello all")])
    async with h.worker():
        # carol's opening formed alone (no fact of it): alice and bob then speak in a group
        # chat, in one window (a window never spans its start: memory/group_start.py).
        await h.form("g")
        opening = len(h.llm.calls("extract_facts"))
        h.llm.defaults["extract_facts"] = gate
        await h.record("g", [_message(1, "alice", ALICE), _message(2, "bob", BOB)])
        run = await h.start("g")
        await gate.entered.wait()  # the pass read both messages
        await h.store.forget_user("alice", agent_id="eve", at=T0 + timedelta(hours=1))
        gate.release.set()
        await run.result()

    # The second pass read the window again: alice's message is gone from its transcript.
    transcripts = [
        [m.content for m in facts_input(r).messages] for r in h.llm.calls("extract_facts")[opening:]
    ]
    assert transcripts == [[ALICE, BOB], [BOB]]
    formed = [(f.content, f.source_message_ids) for f in await h.all_facts(user_id=None)]
    assert formed == [(BOB, ("g2",))]
    state = await h.store.get_session_agent_state("g", "eve")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (3, 0)


async def test_a_forced_request_during_that_pass_forms_what_the_others_said(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The session ends (a forced request) while the pass runs: the window formed again, now
    below the formation threshold without alice's messages, is formed all the same."""
    h = await Harness.create(
        time_env, tmp_path, formation=FormationSettings(min_messages=4, message_interval=4)
    )
    gate = _EveryMessageAFact()
    h.llm.defaults["extract_facts"] = gate
    said = [
        "I moved to Lisbon",
        "The printer on floor 3 is broken",
        "My sister is visiting in June",
        "Our office moves to Oslo in May",
        "I am allergic to peanuts",
        "The quarterly report is due Friday",
    ]
    users = ["alice", "bob"] * 3
    await h.record("g", [_message(n, users[n - 1], text) for n, text in enumerate(said, 1)])
    async with h.worker():
        run = await h.start("g", force=False)  # a turn: due at six messages
        await gate.entered.wait()
        await h.store.forget_user("alice", agent_id="eve", at=T0 + timedelta(hours=1))
        await h.start("g", force=True)  # as EndSession asks: form everything left
        gate.release.set()
        await run.result()

    formed = sorted(f.content for f in await h.all_facts(user_id=None))
    assert formed == sorted(said[1::2])  # bob's
    state = await h.store.get_session_agent_state("g", "eve")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (6, 0)
