"""A formation window is a step payload (every activity of a pass takes it; Temporal refuses one
over 2 MB): it carries the erasure epochs of the users its own messages carry, not of every user
of the session, so a group chat of thousands still forms. Those epochs still make a commit write
nothing for a user forgotten while it ran (memory/store/rules/erasure.py). Windows loaded as the
workflow's first step loads them, on a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from memory.models import MessageIn
from memory.pipeline import commit, window
from memory.pipeline.types import FormationRequest, Window
from runtime.payloads import payload_data_converter
from tests.isolation.bench import T0, Bench, sqlite_bench

USERS = 2_000
# Well under Temporal's 2 MB, and far under the ~280 KB the epochs of USERS ids made.
WINDOW_BYTES = 64_000


def _uid(i: int) -> str:
    return f"u{i:06d}-" + "x" * 120  # 128 characters, as Id allows


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    async with sqlite_bench(tmp_path) as bench:
        yield bench


async def _load(bench: Bench, session_id: str) -> Window:
    request = FormationRequest(session_id=session_id, agent_id="eve", force=True)
    w = await window.load_window(bench.store, bench.settings, request)
    assert w is not None
    return w


async def _commit_empty(bench: Bench, w: Window) -> bool:
    """Commit the window with nothing formed; whether it was discarded for an erasure."""
    result = await commit.commit(bench.deps, w, [], [], [], T0 + timedelta(hours=1))
    return result.discarded_for_erasure


async def test_a_group_chat_of_thousands_loads_a_window_of_its_own_speakers(bench: Bench) -> None:
    messages = [
        MessageIn(
            message_id=f"m{i}", role="user", user_id=_uid(i), content=f"hello number {i}",
            created_at=T0 + timedelta(seconds=i),
        )
        for i in range(USERS)
    ]  # fmt: skip
    for start in range(0, USERS, 500):
        await bench.memory.record_messages("eve", "hall", messages[start : start + 500])

    await _commit_empty(bench, await _load(bench, "hall"))  # the first user alone

    w = await _load(bench, "hall")

    spoke = await bench.store.load_messages("hall", w.after_seq, w.upto_seq)
    assert len(spoke) > 1 and w.user_id is None
    assert w.user_epochs == {m.user_id: 0 for m in spoke if m.user_id}
    [payload] = payload_data_converter.payload_converter.to_payloads([w])
    assert len(payload.data) < WINDOW_BYTES


async def test_a_group_window_carries_the_epochs_of_who_spoke_in_it(bench: Bench) -> None:
    await bench.say("eve", "desk", "Hello all, let us plan the launch.", user_id="carol")
    await _commit_empty(bench, await _load(bench, "desk"))  # carol alone
    await bench.say("eve", "desk", "The printer on floor 3 is broken.", user_id="alice")
    await bench.say("eve", "desk", "Our office moves to Oslo in May.", user_id="bob")
    await _commit_empty(bench, await _load(bench, "desk"))
    await bench.say("eve", "desk", "Which floor again?", user_id="alice")

    w = await _load(bench, "desk")

    assert (w.user_id, w.user_epochs) == (None, {"alice": 0})


async def test_a_forget_while_it_forms_discards_the_commit_of_a_window_it_spoke_in(
    bench: Bench,
) -> None:
    await bench.say("eve", "desk", "Hello all.", user_id="carol")
    await _commit_empty(bench, await _load(bench, "desk"))  # carol alone
    await bench.say("eve", "desk", "The printer on floor 3 is broken.", user_id="alice")
    await bench.say("eve", "desk", "Our office moves to Oslo in May.", user_id="bob")
    group = await _load(bench, "desk")
    # carol said nothing of this window: it holds nothing of hers to write.
    await bench.store.forget_user("carol", agent_id="eve", at=T0 + timedelta(minutes=30))
    assert not await _commit_empty(bench, group)

    await bench.say("eve", "desk", "Which floor again?", user_id="alice")
    await bench.say("eve", "desk", "The third.", user_id="bob")
    asked = await _load(bench, "desk")
    await bench.store.forget_user("alice", agent_id="eve", at=T0 + timedelta(minutes=40))

    assert await _commit_empty(bench, asked)
    again = await _load(bench, "desk")  # without alice's message
    assert again.user_epochs == {"bob": 0}
    assert not await _commit_empty(bench, again)
