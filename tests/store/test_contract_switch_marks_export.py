"""Contract: a store moved by export and import keeps the memory switches its messages still to
form were recorded under (memory/switch_marks.py): the export names them on each message line
(``recorded_under``), the import merges them into the agents' marks, so what was told while user
memory was off stays out of user memory in the store it lands in, whatever that store's agent
says. On every backend: the source and the copy are stores of the backend under test."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path

from memory.deps import Deps
from memory.lifecycle.export import read_export, to_import
from memory.lifecycle.exporting import export_store
from memory.lifecycle.writer import write_batch
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig, FactFilter, MessageIn, SessionAgentState
from memory.pipeline import commit, dedup, facts, window
from memory.pipeline.types import FormationRequest
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.store.builders import T0, record
from tests.store.conftest import opened_store

EMAIL = "My email is alice.private@example.com"
HIKING = "I like hiking in the Alps on weekends"


def _said(n: int, content: str) -> MessageIn:
    return MessageIn(
        message_id=f"m{n}",
        role="user",
        content=content,
        created_at=T0 + timedelta(minutes=n),
        user_id="alice",
    )


async def _told_while_off(store: MemoryStore) -> None:
    """Eve's user memory off while Alice tells her email, on again when she tells her hobby;
    nothing formed yet."""
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve", user_memory_enabled=False))
    await record(store, "s1", "eve", [_said(1, EMAIL)])
    await store.update_agent("eve", {"user_memory_enabled": True})
    await record(store, "s1", "eve", [_said(2, HIKING)])


async def _exported(store: MemoryStore) -> list[str]:
    out = io.StringIO()
    await export_store(store, out, agent_id=None, user_id=None, messages=True, now=T0)
    return out.getvalue().splitlines()


def _deps(store: MemoryStore) -> Deps:
    return Deps(
        settings=Settings(), store=store, llm=HeuristicProvider(), embedder=WordHashEmbedder()
    )


async def _import(store: MemoryStore, lines: list[str]) -> None:
    await write_batch(_deps(store), to_import(read_export(lines)), now=T0 + timedelta(hours=1))


async def _form(store: MemoryStore) -> list[str]:
    """Every window of s1 formed for eve, through the pipeline's own steps; Alice's user memory."""
    deps = _deps(store)
    req = FormationRequest(session_id="s1", agent_id="eve", force=True)
    while (w := await window.load_window(store, deps.settings, req)) is not None:
        new = (await facts.extract_facts(deps, w)).facts
        candidates = await facts.find_candidates(deps, w, new)
        decided = await dedup.decide(deps, w, new, candidates)
        await commit.commit(deps, w, new, decided.decisions, [], T0 + timedelta(hours=2))
    seen = await store.list_facts(FactFilter(agent_id="eve", user_id="alice"))
    return sorted(f.content for f in seen if f.scope == "user")


async def _state(store: MemoryStore) -> SessionAgentState:
    state = await store.get_session_agent_state("s1", "eve")
    assert state is not None
    return state


async def test_a_moved_store_forms_what_was_told_under_the_switches_it_was_told_under(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    await _told_while_off(store)
    lines = await _exported(store)
    async with opened_store(backend, tmp_path / "copy") as copy:
        # The copy's agent has user memory on, as the source's has now.
        await copy.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
        await _import(copy, lines)
        user_memory = await _form(copy)

    assert not any("alice.private@example.com" in text for text in user_memory)
    assert any("hiking" in text.lower() for text in user_memory), user_memory


async def test_importing_the_file_again_or_an_earlier_one_first_keeps_the_same_marks(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    """The file's marks are merged into the store's, never replacing them: the same file twice
    changes nothing, and a session imported from an earlier export (its first message) and then
    from a later one (all of them) ends with the marks of the later one alone."""
    await _told_while_off(store)
    await record(store, "s1", "eve", [_said(3, "Thanks for listening")])
    source = await _state(store)
    lines = await _exported(store)
    header, *records, _ = lines
    agents = [r for r in records if json.loads(r)["type"] == "agent"]
    said = [r for r in records if json.loads(r)["type"] == "message"]
    end = {"type": "end", "counts": {"agent": len(agents), "message": 1}}
    earlier = [header, *agents, said[0], json.dumps(end)]
    async with opened_store(backend, tmp_path / "copy") as copy:
        await _import(copy, lines)
        whole = await _state(copy)
        await _import(copy, lines)
        again = await _state(copy)
    async with opened_store(backend, tmp_path / "parts") as parts:
        await _import(parts, earlier)
        await _import(parts, lines)
        in_parts = await _state(parts)

    # Each message still to form keeps the switches it was recorded under where it comes from:
    # the email's stretch closed at 1, the rest under the switches since.
    assert source.switch_marks == ((1, False, True),)
    assert whole.switch_marks == ((1, False, True), (3, True, True))
    assert again == whole
    assert (in_parts.switch_marks, in_parts.recorded_under) == (whole.switch_marks, None)


async def test_a_file_without_the_switches_imports_as_before(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    """A file written before exports named the switches: no marks, its messages still to form
    form under the switches of the store they land in, as they always did."""
    await _told_while_off(store)
    old = []
    for line in await _exported(store):
        record_ = json.loads(line)
        record_.pop("recorded_under", None)
        if record_["type"] == "header":
            record_["version"] = 2
        old.append(json.dumps(record_))
    async with opened_store(backend, tmp_path / "copy") as copy:
        await _import(copy, old)
        state = await _state(copy)
        user_memory = await _form(copy)

    assert (state.switch_marks, state.recorded_under) == ((), None)
    assert any("alice.private@example.com" in text for text in user_memory), user_memory
