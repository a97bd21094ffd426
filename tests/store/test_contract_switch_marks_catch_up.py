"""Contract: a message the newer export counts as formed where it comes from, but which the copy
must still form (an older export of the session was imported first, so its cursor is behind),
forms under the switches it was said under (the export names them for every message: h226);
and a version 2 file imported after a version 3 one has its messages opened at the next start."""

from __future__ import annotations

import json
from pathlib import Path

from memory import switch_marks
from memory.models import AgentConfig
from memory.store.base import MemoryStore
from tests.lifecycle.test_import_guards import export_lines, import_lines
from tests.store.builders import commit, msg, record
from tests.store.conftest import opened_store


async def test_a_message_said_while_user_memory_was_off_stays_off_after_a_catch_up_import(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada"))
    await record(store, "s1", "a1", [msg("m1", "Hi", seconds=1)])
    older = await export_lines(store)  # m1 to form, under (on, on)
    await store.update_agent("a1", {"user_memory_enabled": False})
    await record(store, "s1", "a1", [msg("m2", "My email is ann@example.com", seconds=2)])
    await store.update_agent("a1", {"user_memory_enabled": True})
    await record(store, "s1", "a1", [msg("m3", "Bye", seconds=3)])
    # a1 forms m1 and m2 here (m2 with user memory off: nothing of the user)
    await store.commit_formation(commit(expected_cursor=0, new_cursor=1))
    await store.commit_formation(commit(expected_cursor=1, new_cursor=2, seconds=110))
    here = await store.get_session_agent_state("s1", "a1")
    assert here is not None and switch_marks.recorded_at(here, 2) == (False, True)
    newer = await export_lines(store)  # m1, m2 formed (no recorded_under), m3 to form
    async with opened_store(backend, tmp_path / "copy") as copy:
        await import_lines(copy, older)
        await import_lines(copy, newer)
        state = await copy.get_session_agent_state("s1", "a1")
    assert state is not None
    # the copy forms m1..m3 (its cursor was at 0): m2 must form with user memory off
    assert state.cursor_seq < 2
    assert switch_marks.recorded_at(state, 2) == (False, True), (
        state.switch_marks,
        state.recorded_under,
    )


def _as_v2(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        r = json.loads(line)
        if r["type"] == "header":
            r["version"] = 2
        r.pop("recorded_under", None)
        out.append(json.dumps(r))
    return out


async def test_a_version_2_file_after_a_version_3_file_is_opened_at_start(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada"))
    await record(store, "s1", "a1", [msg("m1", "Hi", seconds=1)])
    v3 = await export_lines(store)
    await record(store, "s1", "a1", [msg("m2", "My email is ann@example.com", seconds=2)])
    v2 = _as_v2(await export_lines(store))
    async with opened_store(backend, tmp_path / "copy") as copy:
        await import_lines(copy, v3)
        await import_lines(copy, v2)
        await copy.setup()  # a start: opens the states with messages to form and no switch kept
        state = await copy.get_session_agent_state("s1", "a1")
    assert state is not None and state.pending_messages == 2
    # m2: as for a state with no marks, its stretch opened under the agent's switches at start
    assert switch_marks.recorded_at(state, 2) == (True, True)
    assert state.switch_marks == ((1, True, True),)  # the v3 file's mark kept
