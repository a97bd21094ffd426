"""Contract: a user alone in a session two agents share (two backends of one product), forgotten
under each agent in turn, leaves what a forget under every agent leaves: nothing. Each forget
takes the user's messages no other agent holds and its own agent's replies (its side of the
conversation, which quotes the user); the last one takes the session whole. What another agent
has not formed yet stays for it (rules.withheld), and `export --agent A --user U` lists what the
forget under A takes where each agent formed what it recorded (h218 D2; where agents have not
formed each other's records, the export lists by recorder and the forget by holder: README)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from pydantic import BaseModel

from memory.deps import Deps
from memory.lifecycle.dry_run import against_store
from memory.lifecycle.export import read_export, to_import
from memory.lifecycle.exporting import export_store
from memory.llm.base import LLMRequest, LLMResult
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig, ScopeKey
from memory.pipeline import commit, dedup, facts, window
from memory.pipeline.types import FormationRequest
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.lifecycle.test_import_guards import export_lines, import_lines
from tests.store.builders import at, msg, record, record_unmarked, reflection
from tests.store.builders import commit as formation
from tests.store.conftest import opened_store

HIV = "I was diagnosed with HIV last week"


async def _told_two_agents(store: MemoryStore) -> None:
    """u1 tells a1, a1 answers; a2 joins after (at the head) and the same happens."""
    await record(store, "s1", "a1", [
        msg("m1", HIV, seconds=1),
        msg("r1", "I'm sorry you were diagnosed with HIV last week", role="agent", seconds=2),
    ])  # fmt: skip
    await record(store, "s1", "a2", [
        msg("m2", "My HIV meds are expensive", seconds=3),
        msg("r2", "HIV meds can be costly; let's look at options", role="agent", seconds=4),
    ])  # fmt: skip


async def _left(store: MemoryStore) -> list[str]:
    return [m.message_id for m in await store.load_messages("s1", 0, 100)]


async def _listed(store: MemoryStore, agent_id: str | None) -> list[str]:
    out = io.StringIO()
    await export_store(store, out, agent_id=agent_id, user_id="u1", messages=True, now=at(1000))
    lines = map(json.loads, out.getvalue().splitlines())
    return [r["message_id"] for r in lines if r["type"] == "message"]


async def test_a_forget_under_each_agent_in_turn_leaves_nothing(store: MemoryStore) -> None:
    await _told_two_agents(store)
    first = await store.forget_user("u1", agent_id="a1", at=at(100))
    after_a1 = await _left(store)
    second = await store.forget_user("u1", agent_id="a2", at=at(101))

    # a1's forget takes u1's words to a1 and a1's answer; a2's what it held, and the session.
    assert after_a1 == ["m2", "r2"]
    assert await _left(store) == []
    assert await store.get_session("s1") is None
    assert [(c.messages, c.sessions) for c in first + second] == [(2, 0), (2, 1)]
    assert await _listed(store, None) == []


async def test_an_agents_export_of_the_user_lists_what_its_forget_takes(
    store: MemoryStore,
) -> None:
    await _told_two_agents(store)
    listed = await _listed(store, "a1")
    await store.forget_user("u1", agent_id="a1", at=at(100))

    assert listed == ["m1", "r1"]
    assert not set(listed) & set(await _left(store))


async def _a2_first_then_a1_forgets(store: MemoryStore) -> None:
    """a2 in s1 first, formed nothing; u1 tells a1, a1 answers; u1 forgotten under a1."""
    await record(store, "s1", "a2", [msg("m0", "Hello", seconds=0)])
    await record(store, "s1", "a1", [
        msg("m1", HIV, seconds=1),
        msg("r1", "I'm sorry you were diagnosed with HIV last week", role="agent", seconds=2),
    ])  # fmt: skip
    await store.forget_user("u1", agent_id="a1", at=at(100))


async def test_a_reply_another_agent_has_not_formed_yet_stays_for_it(store: MemoryStore) -> None:
    """a2 was in the session first and has formed nothing: u1's words to a1 and a1's answer are
    a2's to form still, and stay for it (withheld from a1); a2's forget then takes them."""
    await _a2_first_then_a1_forgets(store)
    kept = await _left(store)
    await store.forget_user("u1", agent_id="a2", at=at(101))

    assert kept == ["m0", "m1", "r1"]
    assert await _left(store) == []
    assert await store.get_session("s1") is None


async def test_an_agent_that_only_answered_finds_the_session_at_its_forget(
    store: MemoryStore,
) -> None:
    """a2 recorded u1's words; a1, joined at the head, only its answer quoting them. a2's forget
    takes the words (a1 is past them) but keeps u1 the session's participant: a1's forget then
    finds the session and takes the answer, and the session goes (h229 D1: u1's place went
    with a2's forget, and a1's answer quoting the diagnosis stayed for good, beyond any forget
    or export of u1)."""
    await record(store, "s1", "a2", [msg("m1", HIV, seconds=1)])
    await record(store, "s1", "a1", [
        msg("r1", "I'm sorry you were diagnosed with HIV last week", role="agent", seconds=2),
    ])  # fmt: skip
    await store.forget_user("u1", agent_id="a2", at=at(100))
    after_a2 = await _left(store)
    listed = await _listed(store, "a1")
    taken = await store.forget_user("u1", agent_id="a1", at=at(101))

    assert after_a2 == listed == ["r1"]
    assert await _left(store) == []
    assert await store.get_session("s1") is None
    assert [(c.messages, c.sessions) for c in taken] == [(1, 1)]


async def test_the_session_memory_of_an_agent_that_only_answered_goes_at_its_forget(
    store: MemoryStore,
) -> None:
    """The same, a1 having formed a session reflection of u1's words: a1's forget takes it."""
    await record(store, "s1", "a1", [msg("r0", "Hi, I'm Ada", role="agent", seconds=0)])
    await record(store, "s1", "a2", [
        msg("m1", HIV, seconds=1),
        msg("r2", "HIV meds can be costly", role="agent", seconds=2),
    ])  # fmt: skip
    await record(store, "s1", "a1", [msg("r1", "Sorry about the HIV", role="agent", seconds=3)])
    key = ScopeKey.session("a1", "s1")
    formed = await store.commit_formation(formation(
        session_id="s1", agent_id="a1", expected_cursor=0, new_cursor=4,
        reflections=[reflection(key, 0, "u1 was diagnosed with HIV last week")],
    ))  # fmt: skip
    await store.forget_user("u1", agent_id="a2", at=at(100))
    await store.forget_user("u1", agent_id="a1", at=at(101))

    assert not formed.discarded_for_erasure
    assert await store.list_reflections(key, limit=10) == []
    assert await _left(store) == []


async def test_a_backup_brings_back_no_reply_a_forget_under_one_agent_took(
    store: MemoryStore,
) -> None:
    """A backup from before u1's forget under a1, imported again: u1's words to a1 are refused,
    and so is a1's answer quoting them (it came back: h229 D8); a2's side, still stored, is
    there. The dry run says the same."""
    await _told_two_agents(store)
    backup = await export_lines(store)
    await store.forget_user("u1", agent_id="a1", at=at(100))
    after = await _left(store)
    judged = await against_store(store, to_import(read_export(backup)))
    report = await import_lines(store, backup)

    assert after == await _left(store) == ["m2", "r2"]
    assert sorted(d.reason for d in judged.dropped if d.source.collection == "messages") == [
        "already there", "already there", "forgotten user", "forgotten user",
    ]  # fmt: skip
    c = report.counts["messages"]
    assert (c.inserted, c.existing, c.forgotten) == (0, 2, 2)


async def test_a_guests_words_recorded_unmarked_are_no_reply_of_the_user(
    store: MemoryStore,
) -> None:
    """An older process (a rolling upgrade) recorded a guest's words without marking the
    session: a forget of u1 under a1 takes u1's words and a1's replies no other agent holds,
    never the guest's (h229 D6)."""
    await record(store, "s1", "a1", [msg("m1", HIV, seconds=1)])
    await record(store, "s1", "a2", [msg("x", "Hi", role="agent", seconds=2)])
    guest = msg("g1", "I'm a guest and I have diabetes", user_id=None, seconds=3)
    await record_unmarked(store, "s1", "a1", [guest])
    done = formation(session_id="s1", agent_id="a2", expected_cursor=1, new_cursor=3)
    await store.commit_formation(done)  # a2 formed it all: it holds nothing for itself
    await store.forget_user("u1", agent_id="a1", at=at(100))
    shown = await store.get_messages("s1", ["g1"], "a1")

    assert "g1" in await _left(store)
    assert [m.message_id for m in shown] == ["g1"]  # and not withheld from a1 (h234 D3)


async def test_a_reply_kept_for_another_agent_is_no_longer_the_forgetting_agents(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    """a2 was first and has formed nothing: at a1's forget, u1's words to a1 and a1's answer
    stay for a2. Neither is a1's any more: not in a1's export (of u1, or whole), nor among the
    messages a1 is shown (the memory page's sources); in a copy moved by export and import
    neither (h229 D9: the answer, quoting u1, was still listed as a1's)."""
    await _a2_first_then_a1_forgets(store)
    moved = await export_lines(store)

    async def shown(s: MemoryStore) -> tuple[list[str], list[str]]:
        to_a1 = await s.get_messages("s1", ["m0", "m1", "r1"], "a1")
        to_a2 = await s.get_messages("s1", ["m0", "m1", "r1"], "a2")
        return [m.message_id for m in to_a1], [m.message_id for m in to_a2]

    assert await _left(store) == ["m0", "m1", "r1"]
    assert await _listed(store, "a1") == []
    assert "r1" not in await _whole(store, "a1")
    assert await shown(store) == ([], ["m0", "m1", "r1"])
    async with opened_store(backend, tmp_path / "copy") as copy:
        await import_lines(copy, moved)
        assert await shown(copy) == ([], ["m0", "m1", "r1"])


async def _whole(store: MemoryStore, agent_id: str) -> list[str]:
    lines = map(json.loads, await _whole_file(store, agent_id))
    return [r["message_id"] for r in lines if r["type"] == "message"]


async def test_a_move_one_agents_file_at_a_time_keeps_the_other_agents_side(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    """After u1's forget under a1, u1 talks to a1 again in s1. Moved in one file per agent,
    a1's first: a2's records of u1 (kept by a1's forget, its own) come with a2's file, though it
    does not carry a1's tombstone: a forget under a1 never took what a2 recorded (h234 D1: they
    were refused, r2 since the replies counted as u1's)."""
    for agent_id, name in (("a1", "Ada"), ("a2", "Bea")):
        await store.upsert_agent(AgentConfig(agent_id=agent_id, name=name))
    await _told_two_agents(store)
    await store.forget_user("u1", agent_id="a1", at=at(100))
    await record(store, "s1", "a1", [
        msg("m3", "I moved to Lisbon", seconds=200),
        msg("r3", "Lisbon is lovely", role="agent", seconds=201),
    ])  # fmt: skip
    here = await _left(store)
    a1_file, a2_file = await _whole_file(store, "a1"), await _whole_file(store, "a2")
    async with opened_store(backend, tmp_path / "copy") as copy:
        await import_lines(copy, a1_file)
        await import_lines(copy, a2_file)
        moved = await _left(copy)

    assert here == moved == ["m2", "r2", "m3", "r3"]


async def _whole_file(store: MemoryStore, agent_id: str) -> list[str]:
    out = io.StringIO()
    await export_store(store, out, agent_id=agent_id, user_id=None, messages=True, now=at(1000))
    return out.getvalue().splitlines()


class _Heard(HeuristicProvider):
    """The offline model, keeping every prompt it is given."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        self.prompts.append(request.prompt)
        return await super().generate_structured(request, schema)


async def _form(store: MemoryStore, agent_id: str, heard: _Heard) -> int:
    """Every window of s1 formed for the agent through the pipeline's own steps; how many."""
    deps = Deps(settings=Settings(), store=store, llm=heard, embedder=WordHashEmbedder())
    req = FormationRequest(session_id="s1", agent_id=agent_id, force=True)
    formed = 0
    while (w := await window.load_window(store, deps.settings, req)) is not None:
        new = (await facts.extract_facts(deps, w)).facts
        candidates = await facts.find_candidates(deps, w, new)
        decided = await dedup.decide(deps, w, new, candidates)
        await commit.commit(deps, w, new, decided.decisions, [], at(200))
        formed += 1
    return formed


async def test_after_a_forget_under_one_agent_no_window_of_the_conversation_reaches_its_model(
    store: MemoryStore,
) -> None:
    """u1 alone with a1 and a2, nothing formed yet; forgotten under a1: a1's model is given no
    window of the session (its cursor is at the head), and a2's only what a2 holds, none of what
    u1 told a1 nor a1's answer quoting it (h218 D3)."""
    for agent_id in ("a1", "a2"):
        await store.upsert_agent(AgentConfig(agent_id=agent_id, name=agent_id))
    await _told_two_agents(store)
    await store.forget_user("u1", agent_id="a1", at=at(100))
    by_a1, by_a2 = _Heard(), _Heard()

    assert await _form(store, "a1", by_a1) == 0
    assert await _form(store, "a2", by_a2) >= 1
    assert by_a1.prompts == []
    heard = "\n".join(by_a2.prompts)
    assert "meds are expensive" in heard
    assert "diagnosed" not in heard
