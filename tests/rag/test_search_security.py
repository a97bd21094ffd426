"""Property: whatever the agent, toggles, session, user and queries, search_facts returns exactly
the valid facts that turn may see — never another user's, another agent's or an invalidated one.

One small dataset per backend, shared by every example (hypothesis draws the searches).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.models import FactScope, SessionInfo
from memory.rag import search_facts
from memory.search_results import SearchMode
from memory.settings import RagSettings, Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.rag.builders import MemoryWriter, agent, at, session

AGENTS = ("a1", "a2")
USERS = ("u1", "u2", "u3")
WORDS = ("sailing", "chess", "email", "budget", "paris", "garden", "piano", "coffee")


@dataclass(frozen=True)
class Owner:
    agent_id: str
    scope: FactScope
    user_id: str | None
    valid: bool = True


async def build(store: MemoryStore) -> dict[str, Owner]:
    """Per agent: two facts per user, two agent facts, and one user and one agent fact replaced.
    Every fact names its owner and shares words with others, so queries reach across owners."""
    owners: dict[str, Owner] = {}
    for a, agent_id in enumerate(AGENTS):
        writer = MemoryWriter(store, agent_id)
        facts: list[tuple[str, FactScope, str | None, str]] = []
        for u, user_id in enumerate(USERS):
            for i in range(2):
                words = f"{WORDS[(a + u + i) % 8]} {WORDS[(a + 2 * u + i + 3) % 8]}"
                facts.append(
                    (f"{agent_id}-{user_id}-{i}", "user", user_id, f"{user_id} likes {words}")
                )
        for i in range(2):
            facts.append(
                (f"{agent_id}-agent-{i}", "agent", None, f"team {WORDS[a + i]} {WORDS[a + i + 4]}")
            )
        await writer.facts(*facts)
        await writer.replace(
            f"{agent_id}-u1-0", (f"{agent_id}-u1-new", "user", "u1", "u1 now likes chess email")
        )
        await writer.replace(
            f"{agent_id}-agent-0", (f"{agent_id}-agent-new", "agent", None, "team now sailing")
        )
        for fact_id, scope, owner, _ in facts:
            owners[fact_id] = Owner(agent_id, scope, owner)
        owners[f"{agent_id}-u1-new"] = Owner(agent_id, "user", "u1")
        owners[f"{agent_id}-agent-new"] = Owner(agent_id, "agent", None)
        for old in (f"{agent_id}-u1-0", f"{agent_id}-agent-0"):
            owners[old] = Owner(agent_id, owners[old].scope, owners[old].user_id, valid=False)
    stored = {f.fact_id: f.invalidated_at is None for f in await store.get_facts(list(owners))}
    assert stored == {fact_id: owner.valid for fact_id, owner in owners.items()}
    return owners


@pytest.fixture
async def dataset(store: MemoryStore) -> dict[str, Owner]:
    return await build(store)


@dataclass(frozen=True)
class Turn:
    agent_id: str
    user_memory: bool
    agent_memory: bool
    session: SessionInfo | None
    user_id: str | None
    queries: list[str]
    mode: SearchMode
    thresholds: bool
    top_k: int


def _session(kind: str, user_id: str | None) -> SessionInfo | None:
    """No session, the user alone, someone else alone, a group with the user, or nobody."""
    me = user_id or "u1"
    other = next(u for u in USERS if u != me)
    users = {"none": None, "own": (me,), "other": (other,), "group": (me, other), "empty": ()}[kind]
    return None if users is None else session("s1", *users)


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    # Toggles and sessions lean towards the cases that show user facts: those are the ones a
    # leak would come from.
    user_id = draw(st.sampled_from((*USERS, None)))
    kind = draw(st.sampled_from(("none", "own", "own", "other", "group", "empty")))
    words = st.lists(st.sampled_from(WORDS + USERS + AGENTS), min_size=1, max_size=3)
    return Turn(
        agent_id=draw(st.sampled_from(AGENTS)),
        user_memory=draw(st.sampled_from((True, True, False))),
        agent_memory=draw(st.sampled_from((True, True, False))),
        session=_session(kind, user_id),
        user_id=user_id,
        queries=draw(st.lists(words.map(" ".join), min_size=1, max_size=3, unique=True)),
        mode=draw(st.sampled_from(("hybrid", "vector", "text"))),
        thresholds=draw(st.booleans()),
        top_k=draw(st.integers(5, 25)),
    )


LOOSE = Settings(
    rag=RagSettings(semantic_score_threshold=0, text_score_threshold=0, rrf_score_threshold=0)
)


def may_see(turn: Turn, owner: Owner) -> bool:
    if not owner.valid or owner.agent_id != turn.agent_id:
        return False
    if owner.scope == "agent":
        return turn.agent_memory
    if turn.user_id is None or owner.user_id != turn.user_id:
        return False
    alone = turn.session is None or turn.session.user_ids == (turn.user_id,)
    return turn.user_memory and alone


async def check(store: MemoryStore, dataset: dict[str, Owner], turn: Turn) -> None:
    result = await search_facts(
        store,
        WordHashEmbedder(),
        Settings() if turn.thresholds else LOOSE,
        agent=agent(turn.agent_id, user_memory=turn.user_memory, agent_memory=turn.agent_memory),
        session=turn.session,
        user_id=turn.user_id,
        queries=turn.queries,
        top_k=turn.top_k,
        now=at(days=1),
        mode=turn.mode,
    )

    visible = {fid for fid, owner in dataset.items() if may_see(turn, owner)}
    returned = [hit.fact_id for hit in result.hits]
    assert set(returned) <= visible, [(f, dataset[f]) for f in set(returned) - visible]
    if turn.mode != "text" and not turn.thresholds:
        # Every visible fact is a vector candidate then: the filter hides nothing it should show.
        assert len(returned) == min(turn.top_k, len(visible))


# The dataset fixture is built once per test and shared by its examples, on purpose.
_COMMON = settings(
    deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


# SQLite answers in milliseconds: many examples. mongoeco is slow: a few over the same data.
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@settings(_COMMON, max_examples=100)
@given(turn=turns())
async def test_sqlite_never_leaks(
    store: MemoryStore, dataset: dict[str, Owner], turn: Turn
) -> None:
    await check(store, dataset, turn)


@pytest.mark.parametrize("backend", [pytest.param("mongo", marks=pytest.mark.mongo)], indirect=True)
@settings(_COMMON, max_examples=15)
@given(turn=turns())
async def test_mongo_never_leaks(store: MemoryStore, dataset: dict[str, Owner], turn: Turn) -> None:
    await check(store, dataset, turn)
