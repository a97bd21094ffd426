"""Issue #12 case 1 on both backends: a correction of a correction inside one window forms, the
later statement wins, the history keeps every version, and what follows is formed too.

Formation runs in one process (memory/model_check.py, FormMemories' steps without Temporal) with
the offline heuristic provider, so the prompt input, the heuristic, the validation, the commit ops
and the store's commit planner are all on the path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.deps import Deps
from memory.llm.heuristic import HeuristicProvider
from memory.model_check import CheckReport, form_session
from memory.models import AgentConfig, FactFilter, MessageIn
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def said(i: int, text: str) -> MessageIn:
    return MessageIn(
        message_id=f"k{i}",
        role="user",
        content=text,
        created_at=T0 + timedelta(minutes=i),
        user_id="kay",
    )


async def _record(deps: Deps, session: str, messages: list[MessageIn]) -> None:
    # Recorded once the last is said (a time ahead of the recording is stored as the recording's).
    now = max(m.created_at for m in messages)
    await deps.store.record_messages(
        session, "eve", messages, weights={"user": 1.0}, chars_per_token=4.0, now=now
    )


async def test_locker_101_then_102_then_103_ends_at_103_and_the_email_is_formed(
    store: MemoryStore,
) -> None:
    deps = Deps(
        settings=Settings(), store=store, llm=HeuristicProvider(), embedder=WordHashEmbedder()
    )
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    report = CheckReport()
    await _record(deps, "s0", [said(0, "My locker number is 101.")])
    await form_session(deps, "eve", "s0", report)
    await _record(
        deps,
        "s1",
        [
            said(1, "My locker number is 102."),
            said(2, "Sorry, my locker number is 103."),
            said(3, "My email is kay@example.com."),
        ],
    )
    await form_session(deps, "eve", "s1", report)

    assert report.degraded == []
    assert report.steps["decide_facts"].calls == 1  # both corrections decided in one call
    valid = await store.recent_facts(
        FactFilter(agent_id="eve", user_id="kay"), since=T0 - timedelta(days=1), limit=100
    )
    lockers = [f for f in valid if "locker" in f.content]
    assert [("103" in f.content, f.version) for f in lockers] == [(True, 3)]
    assert [("101" in r.content, "102" in r.content) for r in lockers[0].history] == [
        (True, False),
        (False, True),
    ]
    # Provenance through the whole path: each version cites what said it, in the session it
    # was said in (k0 is s0's, k1 said 102: the version that says 103 cites k2 alone).
    assert (lockers[0].source_session_id, lockers[0].source_message_ids) == ("s1", ("k2",))
    assert lockers[0].said_at == T0 + timedelta(minutes=2)
    sources = [(r.source_session_id, r.source_message_ids) for r in lockers[0].history]
    assert sources == [("s0", ("k0",)), ("s1", ("k1",))]
    [email] = [f for f in valid if "kay@example.com" in f.content]
    assert (email.source_message_ids, email.said_at) == (("k3",), T0 + timedelta(minutes=3))
    state = await store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 3 and state.pending_messages == 0
