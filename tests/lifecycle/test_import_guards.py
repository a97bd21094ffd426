"""What an import of a `mnemos export` file must never do, on every backend: bring back what a
forget deleted, change another agent's session, set the store's vector size from the file, or
write anything of a file that breaks the input rules recording applies."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memory.deps import Deps
from memory.errors import EmbeddingMismatchError, InvalidInputError
from memory.lifecycle.export import read_export, to_import
from memory.lifecycle.exporting import export_store
from memory.lifecycle.writer import ImportReport, write_batch
from memory.llm.heuristic import HeuristicProvider
from memory.models import ScopeKey
from memory.settings import Settings
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.fakes import WordHashEmbedder
from tests.store.builders import MODEL, USER_KEY, Former, add, at, msg, record, reflection, unit

NOW = at(365 * 24 * 3600)  # the import's time: a year after the conversations

SESSION_KEY = ScopeKey.session("a1", "s1")


class StoreModelEmbedder(WordHashEmbedder):
    """Embeds as the builders' vectors are: the store's model, 4 dimensions."""

    model = MODEL
    dimension = 4


def deps(store: MemoryStore, embedder: WordHashEmbedder | None = None) -> Deps:
    return Deps(
        settings=Settings(),
        store=store,
        llm=HeuristicProvider(),
        embedder=embedder or StoreModelEmbedder(),
    )


async def export_lines(store: MemoryStore) -> list[str]:
    out = io.StringIO()
    await export_store(store, out, agent_id=None, user_id=None, messages=True, now=NOW)
    return out.getvalue().splitlines()


async def import_lines(
    store: MemoryStore, lines: Iterable[str], embedder: WordHashEmbedder | None = None
) -> ImportReport:
    return await write_batch(deps(store, embedder), to_import(read_export(lines)), now=NOW)


def export_file(*records: dict[str, Any]) -> list[str]:
    """An export file of these records, with its header and end line."""
    counts: dict[str, int] = {}
    for r in records:
        counts[r["type"]] = counts.get(r["type"], 0) + 1
    header = {"type": "header", "format": "mnemos-export", "version": 1, "exported_at": NOW}
    lines = [header, *records, {"type": "end", "counts": counts}]
    return [json.dumps(line, default=datetime.isoformat) for line in lines]


def records_of(lines: list[str]) -> list[dict[str, Any]]:
    """The records of an export, without its header and end line."""
    return [r for r in map(json.loads, lines) if r["type"] not in ("header", "end")]


AGENT = {"type": "agent", "agent_id": "a1", "name": "a1"}


def fact(fact_id: str, content: str = "Likes green tea", **fields: Any) -> dict[str, Any]:
    return {
        "type": "fact", "fact_id": fact_id, "agent_id": "a1", "user_id": "u1", "scope": "user",
        "content": content, "hash": "any", "embedding_model": MODEL, "formed_at": at(10),
        "updated_at": at(10), "embedding": unit(1), **fields,
    }  # fmt: skip


def message(message_id: str, seq: int, **fields: Any) -> dict[str, Any]:
    return {
        "type": "message", "session_id": "s1", "seq": seq, "message_id": message_id,
        "role": "user", "content": f"message {seq}", "created_at": at(seq), "user_id": "u1",
        "agent_id": "a1", **fields,
    }  # fmt: skip


# ---------------------------------------------------------------- a forgotten user


async def test_an_export_from_before_a_forget_brings_back_nothing_it_deleted(
    store: MemoryStore,
) -> None:
    # s1: u1 alone with a1, the agent's answer repeating what u1 said, and session memory of it;
    # s2: u1 and u2 together.
    await record(store, "s1", "a1", [
        msg("m1", "I was diagnosed with asthma", user_id="u1", seconds=1),
        msg("m2", "Sorry to hear about your asthma", role="agent", seconds=2),
    ])  # fmt: skip
    await record(store, "s2", "a1", [
        msg("n1", "u1 says hello", user_id="u1", seconds=3),
        msg("n2", "u2 says hello", user_id="u2", seconds=4),
        msg("n3", "Hello to you both", role="agent", seconds=5),
    ])  # fmt: skip
    noted = reflection(SESSION_KEY, 1, "The user talked about their asthma")
    await Former(store).form(add("f1", "Has asthma", unit(1)), reflections=[noted])
    await store.commit_consolidation(
        SESSION_KEY, expected_version=0, content="Asthma talk", word_limit=100,
        absorbed_ids=[noted.reflection_id], at=at(200),
    )  # fmt: skip
    backup = await export_lines(store)
    await store.forget_user("u1", agent_id="a1", at=at(300))
    # The same file with u1's messages naming no agent (an older or hand-edited file).
    no_agent = [
        {**r, "agent_id": None} if r["type"] == "message" and r["user_id"] == "u1" else r
        for r in records_of(backup)
    ]

    report = await import_lines(store, backup)
    again = await import_lines(store, export_file(*no_agent))

    # The session u1 was alone in stays deleted, the agent's answer and session memory too.
    assert await store.get_session("s1") is None
    assert await store.load_messages("s1", 0, 10) == []
    assert await store.get_consolidated(SESSION_KEY) is None
    assert await store.list_reflections(SESSION_KEY, include_absorbed=True) == []
    assert report.blobs[SESSION_KEY.key] == "forgotten"
    # In the shared session, only u1's message stays out.
    assert [m.message_id for m in await store.load_messages("s2", 0, 10)] == ["n2", "n3"]
    shared = await store.get_session("s2")
    assert shared is not None and shared.user_ids == ("u2",)
    assert await store.get_facts(["f1"]) == []
    messages = report.counts["messages"]
    assert (messages.inserted, messages.forgotten, messages.existing) == (0, 3, 2)
    assert (again.counts["messages"].inserted, again.counts["messages"].forgotten) == (0, 3)


async def test_an_agents_session_memory_a_forget_deleted_stays_deleted_in_a_kept_session(
    store: MemoryStore,
) -> None:
    """u1 alone in s1 with a1 and a2: forget_user(u1, a1) keeps s1 (a2's), but deletes a1's
    session memory of it, formed of u1's words only. An export from before must not bring it
    back."""
    await record(store, "s1", "a1", [msg("m1", "I was diagnosed with asthma", seconds=1)])
    await record(store, "s1", "a2", [msg("m2", "It is getting better", seconds=2)])
    noted = reflection(SESSION_KEY, 1, "The user talked about their asthma")
    buffered = reflection(SESSION_KEY, 2, "The user's asthma came up again")
    await Former(store).form(reflections=[noted])
    await store.commit_consolidation(
        SESSION_KEY, expected_version=0, content="Asthma talk", word_limit=100,
        absorbed_ids=[noted.reflection_id], at=at(200),
    )  # fmt: skip
    await store.import_reflections([buffered])
    backup = await export_lines(store)
    await store.forget_user("u1", agent_id="a1", at=at(300))
    assert await store.get_session("s1") is not None  # a2's still
    assert await store.get_consolidated(SESSION_KEY) is None

    report = await import_lines(store, backup)

    assert report.blobs[SESSION_KEY.key] == "forgotten"
    assert await store.get_consolidated(SESSION_KEY) is None
    assert await store.list_reflections(SESSION_KEY, include_absorbed=True) == []


# ---------------------------------------------------------------- another agent's session


async def test_an_import_into_another_agents_session_leaves_it_as_it_was(
    store: MemoryStore,
) -> None:
    await record(store, "s1", "a2", [
        msg(f"b{i}", f"bob says {i}", user_id="bob", seconds=i) for i in (1, 2, 3)
    ])  # fmt: skip
    state = await store.get_session_agent_state("s1", "a2")
    assert state is not None and state.pending_messages == 3
    lines = export_file(
        {"type": "agent", "agent_id": "a9", "name": "a9"},
        message("x1", 10, user_id="mallory", agent_id="a9", content="mallory was here"),
    )

    report = await import_lines(store, lines)

    assert (report.counts["messages"].inserted, report.counts["messages"].conflict) == (0, 1)
    # a2 still has its three messages to form, and no new participant.
    assert await store.get_session_agent_state("s1", "a2") == state
    session = await store.get_session("s1")
    assert session is not None and (session.agent_ids, session.user_ids) == (("a2",), ("bob",))
    assert [m.message_id for m in await store.load_messages("s1", 0, 20)] == ["b1", "b2", "b3"]


async def test_messages_the_agent_has_not_formed_yet_stay_to_be_formed(
    store: MemoryStore,
) -> None:
    await record(store, "s1", "a1", [msg("m1", seconds=1), msg("m2", seconds=2)])
    # The same conversation one message further (exported elsewhere, later).
    later = [*records_of(await export_lines(store)), message("m3", 3)]

    report = await import_lines(store, export_file(*later))

    assert (report.counts["messages"].inserted, report.counts["messages"].existing) == (1, 2)
    assert [m.message_id for m in await store.load_messages("s1", 0, 10)] == ["m1", "m2", "m3"]
    state = await store.get_session_agent_state("s1", "a1")
    assert state is not None
    assert (state.cursor_seq, state.last_seq, state.pending_messages) == (0, 3, 3)


# ---------------------------------------------------------------- vectors


async def test_file_vectors_of_another_size_are_not_reused(store: MemoryStore) -> None:
    lines = export_file(AGENT, fact("f1", embedding=[1.0, 0.0, 0.0]))

    report = await import_lines(store, lines)

    assert report.counts["facts"].inserted == 1 and report.embedded == 1
    assert await store.embedding_meta() == (MODEL, 4)
    # Formation, with the embedder's vectors, still commits.
    former = await Former(store, session_id="s9").start(1)
    assert (await former.form(add("f2", "Likes coffee", unit(0, 1)))).facts_added == 1


async def test_an_embedder_the_stored_facts_do_not_match_is_refused_before_any_write(
    store: MemoryStore,
) -> None:
    await (await Former(store).start(1)).form(add("f1", "Likes coffee", unit(1)))

    class Wider(StoreModelEmbedder):
        dimension = 8

    # Without a vector, the fact is embedded by the configured embedder, 8 wide.
    lines = export_file(
        {"type": "agent", "agent_id": "a9", "name": "a9"}, fact("f2", embedding=None)
    )
    with pytest.raises(EmbeddingMismatchError):
        await import_lines(store, lines, Wider())

    assert await store.get_agent("a9") is None


# ---------------------------------------------------------------- the input rules


BAD: dict[str, tuple[dict[str, Any], str]] = {
    "NUL in a message": (message("m9", 9, content="nul\x00 byte"), "message m9 .* NUL"),
    "escape in a message": (message("m9", 9, content="red \x1b[31m"), "message m9 .* U\\+001B"),
    "bell in a fact": (fact("f9", "ring \x07"), "fact f9 .* U\\+0007"),
    "5 MB fact": (fact("f9", "word " * 1_000_000), "fact f9 .* at most 100000 characters"),
    "message in year 9999": (
        message("m9", 9, created_at="9999-01-01T00:00:00Z"),
        "message m9 .* 9999-01-01",
    ),
    "fact said in year 9999": (fact("f9", said_at="9999-01-01T00:00:00Z"), "fact f9 .* said_at"),
    "NUL in a fact's history": (
        fact("f9", version=2, history=[{"version": 1, "content": "old\x00", "changed_at": at(5)}]),
        "fact f9 .* history.0.content",
    ),
    "NUL in a reflection": (
        {
            "type": "reflection",
            "reflection_id": "r9",
            "scope_key": USER_KEY.model_dump(),
            "content": "nul\x00",
            "source_session_id": "s1",
            "formed_at": at(5),
        },
        "reflection r9 .* NUL",
    ),
}


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
async def test_a_file_breaking_the_input_rules_is_refused_with_nothing_written(
    store: MemoryStore, bad: tuple[dict[str, Any], str]
) -> None:
    record_, error = bad
    blob = {
        "type": "consolidated", "scope_key": USER_KEY.model_dump(), "content": "Likes tea",
        "version": 1, "word_limit": 100, "updated_at": at(10),
    }  # fmt: skip
    lines = export_file(AGENT, blob, fact("f1"), message("m1", 1), record_)

    with pytest.raises(InvalidInputError, match=f"nothing imported: .*{error}"):
        await import_lines(store, lines)

    assert await store.get_agent("a1") is None
    assert await store.get_consolidated(USER_KEY) is None
    assert await store.get_facts(["f1", "f9"]) == []
    assert await store.get_session("s1") is None


# ---------------------------------------------------------------- a forget during the import

IMPORT_CALLS = [
    "import_agents", "import_messages", "import_consolidated", "import_facts", "import_reflections"
]  # fmt: skip


async def alone_with_the_agent(tmp_path: Path) -> list[str]:
    """The export of another store: u1 alone with a1 in s1, a fact of u1, and session memory
    (a blob and a buffered reflection) that retells what u1 said."""
    source = SQLiteStore(tmp_path / "source.db")
    await source.setup()
    try:
        await record(source, "s1", "a1", [
            msg("m1", "I was diagnosed with asthma", user_id="u1", seconds=1),
            msg("m2", "Sorry to hear about your asthma", role="agent", seconds=2),
        ])  # fmt: skip
        absorbed = reflection(SESSION_KEY, 1, "The user talked about their asthma")
        buffered = reflection(SESSION_KEY, 2, "The user's asthma came up again")
        await Former(source).form(add("f1", "Has asthma", unit(1)), reflections=[absorbed])
        await source.commit_consolidation(
            SESSION_KEY, expected_version=0, content="Asthma talk", word_limit=100,
            absorbed_ids=[absorbed.reflection_id], at=at(200),
        )  # fmt: skip
        await source.import_reflections([buffered])
        return await export_lines(source)
    finally:
        await source.close()


@pytest.mark.parametrize("after", IMPORT_CALLS)
async def test_a_forget_landing_during_an_import_leaves_nothing_of_the_user(
    store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: str
) -> None:
    lines = await alone_with_the_agent(tmp_path)
    call = getattr(store, after)
    forgot: list[object] = []

    async def then_forget(*args: Any, **kwargs: Any) -> Any:
        result = await call(*args, **kwargs)
        if not forgot:  # u1 is forgotten once, right after this call of the import commits
            forgot.append(await store.forget_user("u1", agent_id="a1", at=at(300)))
        return result

    monkeypatch.setattr(store, after, then_forget)

    await import_lines(store, lines)

    assert forgot, f"the import never called {after}"
    assert await store.get_session("s1") is None
    assert await store.load_messages("s1", 0, 10) == []
    assert await store.get_consolidated(SESSION_KEY) is None
    assert await store.list_reflections(SESSION_KEY, include_absorbed=True) == []
    assert await store.get_facts(["f1"]) == []


async def test_memories_of_an_agent_the_file_declares_no_line_for_stay_the_agents(
    store: MemoryStore,
) -> None:
    """A file holding facts of an agent it has no line for (h218 D4): they were imported under an
    unregistered agent, and listing, exporting or forgetting them agent by agent was refused. The
    agent is registered as a placeholder, as an agent line without a config is."""
    from client.management import MemoryManager

    lines = export_file(AGENT, fact("f1", "Likes green tea", agent_id="zz"))

    await import_lines(store, lines)

    agent = await store.get_agent("zz")
    assert agent is not None and agent.name == "zz"
    manager = MemoryManager(store, StoreModelEmbedder(), Settings())
    await manager.forget_user("u1", agent_id="zz")
    assert await store.get_facts(["f1"]) == []
