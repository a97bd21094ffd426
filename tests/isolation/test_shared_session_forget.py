"""A forget under one agent of a session another agent shares, through the real pipeline (the
heuristic provider, formation as the workflow runs it), on every backend: the messages kept for
the other agent are never formed by the agent the user was forgotten for, and the user's new
messages are formed as usual (memory/store/rules/withheld.py)."""

from __future__ import annotations

from pydantic import BaseModel

from memory.llm.base import LLMRequest, LLMResult
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig, FactFilter, ScopeKey
from memory.pipeline import facts, reflections, window
from memory.pipeline.types import FormationRequest
from memory.store.base import MemoryStore
from tests.isolation.bench import T0, Bench

EVE = AgentConfig(agent_id="eve", name="Eve")
BOB = AgentConfig(agent_id="bob", name="Bob")


async def _memory_of_desk(bench: Bench, agent_id: str) -> str:
    """Everything the agent formed of desk: its facts (alice's, carol's, its own) and the
    session memory (a group chat's user statements go there)."""
    texts = []
    for user in ("alice", "carol"):
        flt = FactFilter(agent_id=agent_id, user_id=user, include_agent_scope=True)
        texts += [f.content for f in await bench.store.list_facts(flt)]
    session = ScopeKey.session(agent_id, "desk")
    texts += [r.content for r in await bench.store.list_reflections(session, include_absorbed=True)]
    return " | ".join(texts)


async def _desk(store: MemoryStore, *, carol_first: bool = False) -> Bench:
    """Alice tells bob of her diabetes; eve joins, alice tells her (bob hears it) of her job,
    carol of her weekends. With ``carol_first`` carol speaks before alice's job: eve's first
    window then holds both (a window never spans the moment the session became a group,
    memory/group_start.py, so in the other order alice's job is formed alone)."""
    bench = await Bench.create(store, [EVE, BOB])
    await bench.say("bob", "desk", "I was diagnosed with diabetes in March 2024.", user_id="alice")
    said = [
        ("I work as a pilot for a small airline.", "alice"),
        ("I like sailing on weekends.", "carol"),
    ]
    for text, user in reversed(said) if carol_first else said:
        await bench.say("eve", "desk", text, user_id=user)
    return bench


def _request(agent_id: str) -> FormationRequest:
    return FormationRequest(session_id="desk", agent_id=agent_id, force=True)


async def test_eve_never_forms_what_her_forget_kept_for_bob(store: MemoryStore) -> None:
    bench = await _desk(store)

    [counts] = await store.forget_user("alice", agent_id="eve", at=T0)

    assert counts.messages == 0, "bob holds both (his record; one he has not formed yet)"
    await bench.form("desk", "eve")
    eve = await _memory_of_desk(bench, "eve")
    assert "sailing" in eve, eve
    assert "pilot" not in eve and "diabetes" not in eve, f"eve formed alice's kept words: {eve}"
    deps = bench.deps  # bob still reads all of alice's words, and forms them
    bobs = await window.load_window(deps.store, deps.settings, _request("bob"))
    assert bobs is not None
    said = " ".join(m.content for m in await window.window_messages(deps, bobs))
    assert "diabetes" in said and "pilot" in said, f"bob lost alice's messages: {said!r}"
    await bench.form("desk", "bob")
    assert "diabetes" in await _memory_of_desk(bench, "bob")

    # Alice speaks to eve again: her new words are eve's to form, the old ones still are not.
    await bench.say("eve", "desk", "I moved to Oslo last year.", user_id="alice")
    state = await store.get_session_agent_state("desk", "eve")
    assert state is not None and state.pending_messages == 1
    await bench.form("desk", "eve")
    eve = await _memory_of_desk(bench, "eve")
    assert "Oslo" in eve and "pilot" not in eve and "diabetes" not in eve, eve


async def test_a_transcript_read_before_the_forget_is_read_without_the_kept_messages(
    store: MemoryStore,
) -> None:
    """A formation of eve running when alice is forgotten for her: its steps read the window
    again after the forget (a cached transcript too) without alice's messages kept for bob."""
    bench = await _desk(store, carol_first=True)
    deps = bench.deps
    w = await window.load_window(deps.store, deps.settings, _request("eve"))
    assert w is not None
    before = await window.window_messages(deps, w)
    assert [m.user_id for m in before] == ["carol", "alice"]

    await store.forget_user("alice", agent_id="eve", at=T0)

    after = await window.window_messages(deps, w)
    assert [m.user_id for m in after] == ["carol"], "the running formation still reads alice"
    again = await window.load_window(deps.store, deps.settings, _request("eve"))
    assert again is not None
    assert [m.user_id for m in await window.window_messages(deps, again)] == ["carol"]


class _Counting(HeuristicProvider):
    """The offline provider, counting the model calls it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        self.calls += 1
        return await super().generate_structured(request, schema)


async def test_a_window_of_only_withheld_messages_asks_the_model_nothing(
    store: MemoryStore,
) -> None:
    """Eve's whole pending range is alice's words kept for bob: a forced pass (a session end,
    the cold job) has nothing to read, and a model asked with an empty transcript could only
    make memories up from its instructions and the current blobs. Carol spoke first: in a
    session alice was alone in, a forget under eve would leave eve nothing to pass at all."""
    bench = await Bench.create(store, [EVE, BOB])
    await bench.say("bob", "desk", "Hello everyone.", user_id="carol")
    await bench.say("bob", "desk", "I was diagnosed with diabetes in March 2024.", user_id="alice")
    await bench.say("eve", "desk", "I work as a pilot for a small airline.", user_id="alice")
    await store.forget_user("alice", agent_id="eve", at=T0)
    counting = _Counting()
    bench.llm = counting
    deps = bench.deps
    w = await window.load_window(deps.store, deps.settings, _request("eve"))
    assert w is not None  # the range is still eve's to pass
    assert (await facts.extract_facts(deps, w)).facts == []
    assert (await reflections.extract_reflections(deps, w, [])).reflections == []
    assert counting.calls == 0
