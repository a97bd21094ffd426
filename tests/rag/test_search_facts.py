"""search_facts against a real store with WordHashEmbedder vectors.

``store`` tests run on SQLite and MongoDB (what the backends must agree on: scopes, validity,
ranking of an obvious match); ``sqlite_store`` tests cover the backend-independent pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from memory.embedding.base import Embedder, EmbeddingBatch
from memory.errors import EmbeddingMismatchError, InvalidInputError
from memory.models import AgentConfig, FactScope, SessionInfo
from memory.rag import search_facts
from memory.search_results import SearchMode, SearchResult
from memory.settings import RagSettings, Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.rag.builders import T0, CountingStore, MemoryWriter, agent, at, session

SETTINGS = Settings()

FACTS: list[tuple[str, FactScope, str | None, str]] = [
    ("f-email", "user", "u1", "Alice's email address is alice@example.com"),
    ("f-pet", "user", "u1", "Alice has a cat named Tiger"),
    ("f-bob", "user", "u2", "Bob's email address is bob@example.org"),
    ("f-budget", "agent", None, "The Mars festival budget is 50000 dollars"),
    ("f-deadline", "agent", None, "The Mars festival deadline is January 30"),
    ("f-office", "agent", None, "The office is in Lisbon near the river"),
    ("f-api", "agent", None, "The API endpoint is api.example.net/v2"),
    ("f-standup", "agent", None, "Standup meetings happen at nine every weekday"),
    ("f-design", "agent", None, "The design team uses Figma for mockups"),
    ("f-staging", "agent", None, "The staging server runs Debian twelve"),
    ("f-invoices", "agent", None, "Invoices are sent on the first of each month"),
    ("f-support", "agent", None, "Support tickets are triaged every morning"),
]


async def seed(store: MemoryStore) -> None:
    a1 = MemoryWriter(store, "a1")
    await a1.facts(*FACTS)
    a2 = MemoryWriter(store, "a2")
    await a2.facts(
        ("g-budget", "agent", None, "The Mars festival budget of the other agent is secret"),
        ("g-email", "user", "u1", "Alice's email address for the other agent is hidden"),
    )


async def ask(
    store: MemoryStore,
    *queries: str,
    who: AgentConfig | None = None,
    where: SessionInfo | None = None,
    user_id: str | None = "u1",
    settings: Settings = SETTINGS,
    embedder: Embedder | None = None,
    top_k: int | None = None,
    debug: bool = False,
    mode: SearchMode = "hybrid",
) -> SearchResult:
    return await search_facts(
        store,
        embedder or WordHashEmbedder(),
        settings,
        agent=who or agent(),
        session=where if where is not None else session("s1", "u1"),
        user_id=user_id,
        queries=list(queries),
        top_k=top_k,
        debug=debug,
        now=at(days=2),
        mode=mode,
    )


# One query for a user fact, one for an agent fact.
BOTH = ("Alice email address", "Mars festival budget")


def ids(result: SearchResult) -> list[str]:
    return [hit.fact_id for hit in result.hits]


# ---------------------------------------------------------------- what is found


async def test_the_matching_fact_comes_first_with_its_details(store: MemoryStore) -> None:
    await seed(store)

    result = await ask(store, "Mars festival budget")

    top = result.hits[0]
    assert top.fact_id == "f-budget"
    assert top.content == "The Mars festival budget is 50000 dollars"
    assert top.scope == "agent"
    assert top.age == "2d ago"
    assert top.updated_at == T0
    assert top.said_at is None  # seeded as a store older than said_at
    assert 0 < top.score <= 1
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert result.debug is None


async def test_a_hit_says_when_it_was_said_and_its_age_counts_from_then(
    store: MemoryStore,
) -> None:
    await seed(store)
    said = at(days=-3, hours=-2)
    await MemoryWriter(store, "a1").facts(
        ("f-move", "agent", None, "The team moved to Porto on 24 February 2025"), said_at=said
    )

    top = (await ask(store, "team moved to Porto")).hits[0]

    assert (top.fact_id, top.said_at, top.updated_at) == ("f-move", said, T0)
    assert top.age == "5d ago"


async def test_a_hit_names_the_messages_it_was_formed_from(store: MemoryStore) -> None:
    await seed(store)
    await MemoryWriter(store, "a1").facts(
        ("f-move", "agent", None, "The team moved to Porto on 24 February 2025"),
        session="s-move",
        sources=("m-3", "m-4"),
    )

    top = (await ask(store, "team moved to Porto")).hits[0]

    assert (top.fact_id, top.source_session_id, top.source_message_ids) == (
        "f-move",
        "s-move",
        ("m-3", "m-4"),
    )


async def test_a_user_sees_their_own_user_facts_and_never_another_users(store: MemoryStore) -> None:
    await seed(store)

    alice = await ask(store, "email address", user_id="u1")
    bob = await ask(store, "email address", where=session("s2", "u2"), user_id="u2")

    assert "f-email" in ids(alice) and "f-bob" not in ids(alice)
    assert "f-bob" in ids(bob) and "f-email" not in ids(bob)
    assert not {"g-budget", "g-email"} & set(ids(alice) + ids(bob))  # another agent's memory


async def test_an_invalidated_fact_is_never_returned(store: MemoryStore) -> None:
    await seed(store)
    await MemoryWriter(store, "a1").replace(
        "f-pet", ("f-pet2", "user", "u1", "Alice has a dog named Tiger"), when=at(days=1)
    )

    result = await ask(store, "Alice cat named Tiger", settings=_no_thresholds())

    assert "f-pet" not in ids(result)
    assert ids(result)[0] == "f-pet2"


async def test_a_group_chat_hides_user_facts(store: MemoryStore) -> None:
    await seed(store)

    result = await ask(store, *BOTH, where=session("g", "u1", "u2"))

    assert "f-budget" in ids(result)
    assert {h.scope for h in result.hits} == {"agent"}


async def test_user_facts_need_the_sessions_own_user(sqlite_store: MemoryStore) -> None:
    await seed(sqlite_store)

    outsider = await ask(sqlite_store, *BOTH, where=session("s2", "u2"), user_id="u1")
    anonymous = await ask(sqlite_store, *BOTH, user_id=None)
    no_session = await ask(sqlite_store, *BOTH, where=None, user_id="u1")

    assert {h.scope for h in outsider.hits} == {"agent"}
    assert {h.scope for h in anonymous.hits} == {"agent"}
    assert {"f-email", "f-budget"} <= set(ids(no_session))  # no session: only the toggles count


@pytest.mark.parametrize(
    ("user_memory", "agent_memory", "scopes"),
    [(True, False, {"user"}), (False, True, {"agent"})],
)
async def test_toggles_choose_the_scopes_searched(
    sqlite_store: MemoryStore, user_memory: bool, agent_memory: bool, scopes: set[str]
) -> None:
    await seed(sqlite_store)
    who = agent(user_memory=user_memory, agent_memory=agent_memory)

    result = await ask(sqlite_store, *BOTH, who=who)

    assert {h.scope for h in result.hits} == scopes


async def test_with_every_scope_off_nothing_is_searched(sqlite_store: MemoryStore) -> None:
    await seed(sqlite_store)
    counting = CountingStore(sqlite_store)
    embedder = WordHashEmbedder()

    result = await ask(
        counting.as_store(),
        "festival budget",
        who=agent(user_memory=False, agent_memory=False),
        embedder=embedder,
        debug=True,
    )

    assert result.hits == []
    assert counting.calls == {}
    assert embedder.calls == []


async def test_an_empty_store_returns_nothing(sqlite_store: MemoryStore) -> None:
    counting = CountingStore(sqlite_store)

    result = await ask(counting.as_store(), "festival budget")

    assert result.hits == []
    assert counting.calls["touch_facts"] == 0


# ---------------------------------------------------------------- queries, top_k, fusion


async def test_all_queries_are_embedded_in_one_call(sqlite_store: MemoryStore) -> None:
    await seed(sqlite_store)
    embedder = WordHashEmbedder()

    await ask(sqlite_store, " festival budget ", "Alice email", "office", embedder=embedder)

    assert embedder.calls == [["festival budget", "Alice email", "office"]]


async def test_a_fact_found_by_several_queries_is_returned_once(sqlite_store: MemoryStore) -> None:
    await seed(sqlite_store)

    result = await ask(sqlite_store, "Alice email", "email address", "alice example com")

    assert ids(result).count("f-email") == 1
    assert len(ids(result)) == len(set(ids(result)))


async def test_top_k_bounds_the_hits(sqlite_store: MemoryStore) -> None:
    await seed(sqlite_store)
    loose = _no_thresholds()

    assert len((await ask(sqlite_store, "the", settings=loose, top_k=5)).hits) == 5
    assert len((await ask(sqlite_store, "the", settings=loose)).hits) == 10
    assert len((await ask(sqlite_store, "the", settings=loose, top_k=1)).hits) == 1  # no floor
    with pytest.raises(InvalidInputError, match="top_k"):
        await ask(sqlite_store, "the", top_k=26)


async def test_top_k_is_per_query_so_one_topic_cannot_crowd_out_another(
    sqlite_store: MemoryStore,
) -> None:
    """002: top_k is "Number of facts to retrieve per query". Six festival facts all match the
    first query better than the office fact matches the second: cut once over all queries, the
    office fact was left out (the seeds audit: 5 hits for 3 topics, one topic with 1)."""
    writer = MemoryWriter(sqlite_store, "a1")
    festival: list[tuple[str, FactScope, str | None, str]] = [
        (f"f-fest{i}", "agent", None, f"The Mars festival {part} budget is {i}000 dollars")
        for i, part in enumerate(["stage", "light", "food", "sound", "print", "guard"], start=1)
    ]
    await writer.facts(*festival, ("f-office", "agent", None, "The office is in Lisbon"))

    alone = await ask(sqlite_store, "Mars festival budget", top_k=5)
    both = await ask(sqlite_store, "Mars festival budget", "office Lisbon", top_k=5)

    assert len(alone.hits) == 5 and "f-office" not in ids(alone)
    assert "f-office" in ids(both)
    assert [h for h in ids(both) if h.startswith("f-fest")] == ids(alone)  # the first's five
    assert [h.score for h in both.hits] == sorted((h.score for h in both.hits), reverse=True)


async def test_bad_input_is_refused_before_any_store_call(sqlite_store: MemoryStore) -> None:
    counting = CountingStore(sqlite_store)

    for queries in ([], ["a", "b", "c", "d"], ["  "]):
        with pytest.raises(InvalidInputError):
            await ask(counting.as_store(), *queries)

    assert counting.calls == {}


def _no_thresholds() -> Settings:
    return Settings(
        rag=RagSettings(semantic_score_threshold=0, text_score_threshold=0, rrf_score_threshold=0)
    )


async def test_each_list_keeps_only_candidates_above_its_threshold(
    store: MemoryStore,
) -> None:
    await seed(store)

    result = await ask(store, "Mars festival budget dollars", "office", debug=True)

    assert result.debug is not None
    thresholds = {"vector": 0.65, "text": 1.5}
    passed: set[str] = set()
    for ranked in result.debug.lists:
        for c in ranked.candidates:
            assert (c.rank is not None) == (c.score >= thresholds[ranked.source])
        passed |= {c.fact_id for c in ranked.candidates if c.rank is not None}
        ranks = [c.rank for c in ranked.candidates if c.rank is not None]
        assert ranks == list(range(1, len(ranks) + 1))
    assert any(c.rank is None for r in result.debug.lists for c in r.candidates)
    assert set(ids(result)) <= passed


async def test_strict_thresholds_leave_nothing(sqlite_store: MemoryStore) -> None:
    await seed(sqlite_store)
    strict = Settings(rag=RagSettings(semantic_score_threshold=0.999, text_score_threshold=1000))

    result = await ask(sqlite_store, "Mars festival budget", settings=strict, debug=True)

    assert result.hits == []
    assert result.debug is not None
    assert all(c.rank is None for r in result.debug.lists for c in r.candidates)
    assert any(r.candidates for r in result.debug.lists)


async def test_the_rrf_gate_can_demand_both_methods(sqlite_store: MemoryStore) -> None:
    await seed(sqlite_store)
    # Above a lone first place (1/61): only facts that both lists found pass.
    both = Settings(rag=RagSettings(semantic_score_threshold=0, text_score_threshold=0,
                                    rrf_score_threshold=0.0165))  # fmt: skip

    result = await ask(sqlite_store, "Alice email address", settings=both, debug=True)

    assert result.debug is not None
    lists = {r.source: {c.fact_id for c in r.candidates if c.rank} for r in result.debug.lists}
    assert ids(result)
    assert set(ids(result)) <= lists["vector"] & lists["text"]
    gated = {f.fact_id for f in result.debug.fused if not f.passed}
    assert lists["vector"] ^ lists["text"]
    assert lists["vector"] ^ lists["text"] <= gated


async def test_debug_explains_every_stage(sqlite_store: MemoryStore) -> None:
    await seed(sqlite_store)

    plain = await ask(sqlite_store, "When is the Mars festival deadline?", "Figma")
    result = await ask(sqlite_store, "When is the Mars festival deadline?", "Figma", debug=True)

    debug = result.debug
    assert debug is not None
    assert ids(result) == ids(plain)
    assert set(debug.timings_ms) == {"embed", "search", "fuse", "touch", "total"}
    assert all(v >= 0 for v in debug.timings_ms.values())
    assert debug.timings_ms["total"] >= debug.timings_ms["search"]
    assert [(r.query, r.source) for r in debug.lists] == [
        ("When is the Mars festival deadline?", "vector"),
        ("Figma", "vector"),
        ("When is the Mars festival deadline?", "text"),
        ("Figma", "text"),
    ]
    assert debug.lists[2].store_query == "Mars festival deadline"
    assert debug.candidates_per_list == 40  # top_k 10 × candidate_multiplier 4
    assert [f.fact_id for f in debug.fused if f.returned] == ids(result)
    assert {"f-deadline", "f-design"} <= set(ids(result))


@pytest.mark.parametrize("mode", ["vector", "text"])
async def test_a_single_mode_runs_only_its_search(
    sqlite_store: MemoryStore, mode: SearchMode
) -> None:
    await seed(sqlite_store)
    embedder = WordHashEmbedder()

    result = await ask(sqlite_store, "festival deadline", embedder=embedder, mode=mode, debug=True)

    assert result.debug is not None
    assert {r.source for r in result.debug.lists} == {mode}
    assert bool(embedder.calls) == (mode == "vector")
    assert ids(result)[0] == "f-deadline"


async def test_returned_facts_are_marked_accessed(store: MemoryStore) -> None:
    await seed(store)

    result = await ask(store, "Mars festival budget", top_k=5)

    facts = {f.fact_id: f for f in await store.get_facts([f[0] for f in FACTS])}
    for fact_id, fact in facts.items():
        if fact_id in ids(result):
            assert (fact.access_count, fact.last_accessed_at) == (1, at(days=2))
        else:
            assert (fact.access_count, fact.last_accessed_at) == (0, None)


class _OtherModel(Embedder):
    model = "another-model"
    dimension = WordHashEmbedder.dimension

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        batch = await WordHashEmbedder().embed(texts)
        return EmbeddingBatch(vectors=batch.vectors, model=self.model, dimension=self.dimension)


async def test_an_embedder_of_another_model_is_refused(sqlite_store: MemoryStore) -> None:
    await seed(sqlite_store)

    with pytest.raises(EmbeddingMismatchError, match="another-model"):
        await ask(sqlite_store, "festival budget", embedder=_OtherModel())


async def test_ages_are_relative_to_now(sqlite_store: MemoryStore) -> None:
    await MemoryWriter(sqlite_store).facts(
        ("new", "agent", None, "The Mars festival budget grew"),
        when=at(days=2) - timedelta(minutes=5),
    )

    result = await ask(sqlite_store, "festival budget", settings=_no_thresholds())

    assert [(h.fact_id, h.age) for h in result.hits] == [("new", "5m ago")]
