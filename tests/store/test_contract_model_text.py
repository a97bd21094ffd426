"""Contract: a model's answer holding a character no store can hold forms and commits on every
backend, the character left out (promise 2: no model output stops a session's memory).

A NUL is JSON's ``"\\u0000"``, which every parser accepts; PostgreSQL refused it in a fact's JSONB
body and a reflection's text on every retry, and the session's cursor never moved again. An
unpaired surrogate (a Python string can hold one; UTF-8 cannot encode it) is the other character
``memory.input_rules.text_problem`` refuses in what a person sends. Formation runs step by step as
the FormMemories workflow runs it (tests/isolation/bench.py), the answers scripted as the parsed
JSON a provider validates with the output schema."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from memory.models import AgentConfig, FactFilter, ScopeKey
from memory.pipeline import consolidation
from memory.pipeline.types import ConsolidationRequest
from memory.store.base import MemoryStore
from tests.fakes import ScriptedLLM
from tests.isolation.bench import T0, Bench

EVE = AgentConfig(agent_id="eve", name="Eve")
SESSION_MEMORY = ScopeKey.session("eve", "s1")

# What no store holds, in the middle of a word and at the end of a text.
UNSTORABLE = pytest.mark.parametrize("bad", ["\x00", "\ud800"], ids=["nul", "surrogate"])


@pytest.fixture
async def bench(store: MemoryStore) -> AsyncIterator[Bench]:
    bench = await Bench.create(store, [EVE])
    bench.llm = ScriptedLLM(defaults={"same_fact": {"same": False}})
    yield bench


def llm(bench: Bench) -> ScriptedLLM:
    assert isinstance(bench.llm, ScriptedLLM)
    return bench.llm


def fact(content: str, source: int) -> dict[str, Any]:
    return {
        "facts": [{"content": content, "scope": "user", "speaker": "alice", "sources": [source]}]
    }


def session_reflection(content: str) -> dict[str, Any]:
    return {
        "agent_reflections": [],
        "user_reflections": [],
        "session_reflections": [{"content": content, "speaker": None, "sources": [1]}],
    }


async def cursor(store: MemoryStore) -> int:
    state = await store.get_session_agent_state("s1", "eve")
    assert state is not None
    return state.cursor_seq


async def alices_facts(store: MemoryStore) -> list[str]:
    return [f.content for f in await store.list_facts(FactFilter(agent_id="eve", user_id="alice"))]


@UNSTORABLE
async def test_a_fact_and_a_reflection_answered_with_it_are_stored_without_it(
    store: MemoryStore, bench: Bench, bad: str
) -> None:
    await bench.say("eve", "s1", "My favourite tea is oolong", user_id="alice")
    llm(bench).script("extract_facts", fact(f"Alice's favourite tea is oo{bad}long{bad}", 1))
    llm(bench).script("extract_reflections", session_reflection(f"Alice enjoys oolong tea{bad}"))

    await bench.form("s1", "eve")

    assert await alices_facts(store) == ["Alice's favourite tea is oolong"]
    [reflection] = await store.unabsorbed_reflections(SESSION_MEMORY)
    assert reflection.content == "Alice enjoys oolong tea"
    assert await cursor(store) == 1


@UNSTORABLE
async def test_a_merged_update_answered_with_it_is_stored_without_it(
    store: MemoryStore, bench: Bench, bad: str
) -> None:
    await bench.say("eve", "s1", "I live in Berlin with my cat Tom", user_id="alice")
    llm(bench).script("extract_facts", fact("Alice lives in Berlin with her cat Tom", 1))
    llm(bench).script("extract_reflections", session_reflection("Alice mentioned her home"))
    await bench.form("s1", "eve")

    await bench.say("eve", "s1", "I now live in Munich with my cat Tom", user_id="alice")
    llm(bench).script("extract_facts", fact("Alice now lives in Munich with her cat Tom", 1))
    decision = {"new_fact_index": 0, "event": "UPDATE", "existing_index": 0}
    merged = f"Alice lives in Munich{bad} with her cat Tom"  # worded otherwise than the new fact
    llm(bench).script("decide_facts", {"decisions": [{**decision, "merged_text": merged}]})
    llm(bench).script("extract_reflections", session_reflection("Alice moved house"))
    await bench.form("s1", "eve")

    assert llm(bench).calls("decide_facts")  # the model's merge, not a rule's decision
    assert await alices_facts(store) == ["Alice lives in Munich with her cat Tom"]
    assert await cursor(store) == 2


@UNSTORABLE
async def test_a_consolidation_answered_with_it_is_stored_without_it(
    store: MemoryStore, bench: Bench, bad: str
) -> None:
    await bench.say("eve", "s1", "My favourite tea is oolong", user_id="alice")
    llm(bench).script("extract_facts", {"facts": []})
    llm(bench).script("extract_reflections", session_reflection("Alice enjoys oolong tea"))
    await bench.form("s1", "eve")
    section = {"title": f"TE{bad}A", "items": [f"Alice enjoys{bad} oolong tea{bad}"]}
    llm(bench).script("consolidate", {"sections": [section]})

    request = ConsolidationRequest(key=SESSION_MEMORY, force=True)
    draft = await consolidation.draft(bench.deps, request)
    await consolidation.apply(bench.deps, draft, T0)

    blob = await store.get_consolidated(SESSION_MEMORY)
    assert blob is not None
    assert blob.content == "VERSION: 1\n[TEA]\n- Alice enjoys oolong tea"
