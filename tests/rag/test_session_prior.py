"""The session prior of search_facts: the best hits' sessions lift their other candidates.

Pure tests of ``with_session_prior``, then through search_facts on a real store: the answer that
shares no word with the question comes up beside the fact that matched it, and the prior never
reaches past the scopes the turn may see.
"""

from __future__ import annotations

import pytest

from memory.fusion import Fused, with_session_prior
from memory.models import Fact, ScoredFact
from memory.rag import search_facts
from memory.settings import RagSettings, Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.rag.builders import T0, MemoryWriter, agent, session


def fused(fact_id: str, score: float, session_id: str | None) -> Fused:
    fact = Fact(
        fact_id=fact_id, agent_id="a1", scope="agent", content=f"fact {fact_id}", hash=fact_id,
        embedding_model="m", source_session_id=session_id, formed_at=T0, updated_at=T0,
    )  # fmt: skip
    return Fused(hit=ScoredFact(fact=fact, score=score), rrf=0.02, score=score)


def order(items: list[Fused]) -> list[str]:
    return [f.hit.fact.fact_id for f in items]


CANDIDATES = [
    fused("match", 1.0, "wedding"),
    fused("other", 0.5, "hiking"),
    fused("elsewhere", 0.42, "cooking"),
    fused("answer", 0.4, "wedding"),
]


def test_a_candidate_of_a_best_hits_session_moves_up() -> None:
    lifted = with_session_prior(CANDIDATES, weight=0.3, hits=2)

    assert order(lifted) == ["match", "answer", "other", "elsewhere"]
    answer = next(f for f in lifted if f.hit.fact.fact_id == "answer")
    assert answer.session_prior == pytest.approx(0.3)
    assert answer.score == pytest.approx((0.4 + 0.3) / 1.3)


def test_the_best_hits_keep_their_scores_and_every_score_stays_in_0_1() -> None:
    lifted = {f.hit.fact.fact_id: f.score for f in with_session_prior(CANDIDATES, weight=1, hits=2)}

    assert lifted["match"] == pytest.approx(1.0)
    assert lifted["other"] == pytest.approx(0.5)
    assert all(0 < score <= 1 for score in lifted.values())


def test_only_the_first_hits_lend_a_prior() -> None:
    lifted = with_session_prior(CANDIDATES, weight=0.3, hits=1)

    assert order(lifted) == ["match", "answer", "other", "elsewhere"]
    elsewhere = next(f for f in lifted if f.hit.fact.fact_id == "elsewhere")
    assert elsewhere.session_prior == 0  # "cooking" holds no best hit


def test_weight_zero_changes_nothing() -> None:
    assert with_session_prior(CANDIDATES, weight=0, hits=2) == CANDIDATES


def test_a_fact_without_a_session_lends_only_to_itself() -> None:
    items = [fused("imported", 1.0, None), fused("b", 0.5, None), fused("c", 0.45, "s1")]

    lifted = with_session_prior(items, weight=0.3, hits=2)

    assert order(lifted) == ["imported", "b", "c"]
    assert [f.score for f in lifted][:2] == pytest.approx([1.0, 0.5])
    assert lifted[2].session_prior == 0


def test_the_prior_adds_and_drops_no_candidate() -> None:
    lifted = with_session_prior(CANDIDATES, weight=0.3, hits=2)

    assert sorted(order(lifted)) == sorted(order(CANDIDATES))


# ---------------------------------------------------------------- through search_facts

QUESTION = "How long has Caroline been married?"
NO_GATES = dict(
    calibrated_gates=False, semantic_score_threshold=0, text_score_threshold=0,
    rrf_score_threshold=0,
)  # fmt: skip


def settings(prior: float) -> Settings:
    return Settings(rag=RagSettings(**NO_GATES, session_prior_weight=prior))


async def ask(store: MemoryStore, prior: float, user_id: str | None = None) -> list[str]:
    result = await search_facts(
        store, WordHashEmbedder(), settings(prior), agent=agent(), session=None,
        user_id=user_id, queries=[QUESTION], top_k=5, now=T0,
    )  # fmt: skip
    return [hit.fact_id for hit in result.hits]


async def seed(store: MemoryStore) -> None:
    writer = MemoryWriter(store)
    await writer.facts(
        ("asked", "agent", None, "Melanie asked Caroline how long she has been married"),
        ("vows", "agent", None, "Caroline and her husband married long ago in Sweden"),
        ("answer", "agent", None, "Caroline answered five years already, with a big smile"),
        session="wedding",
    )
    await writer.facts(
        ("walks", "agent", None, "Caroline likes long walks by the lake"),
        ("paint", "agent", None, "Melanie paints sunsets on Sundays"),
        ("kids", "agent", None, "Melanie takes the kids camping in summer"),
        session="hiking",
    )


async def test_the_answer_comes_up_beside_the_question_it_answers(store: MemoryStore) -> None:
    await seed(store)

    without = await ask(store, prior=0)
    with_prior = await ask(store, prior=0.3)

    assert without[:2] == with_prior[:2] == ["asked", "vows"]
    assert without.index("walks") < without.index("answer")  # more shared words
    assert with_prior.index("answer") < with_prior.index("walks")  # said right after the match


async def test_the_prior_never_reaches_another_users_memory(store: MemoryStore) -> None:
    """u2's private fact formed in the session of u1's best hit stays u2's: the prior only
    reorders candidates found within the turn's scopes, so it is neither returned nor lifted."""
    writer = MemoryWriter(store)
    await writer.facts(
        ("asked", "user", "u1", "Caroline asked how long Melanie has been married"),
        ("secret", "user", "u2", "Caroline married in secret, five years already"),
        session="group",
    )
    await writer.facts(("walks", "agent", None, "Someone likes long walks"), session="hiking")
    turn = session("later", "u1")  # u1 alone: its user memory is on

    result = await search_facts(
        store, WordHashEmbedder(), settings(0.3), agent=agent(), session=turn, user_id="u1",
        queries=[QUESTION], top_k=5, now=T0, debug=True,
    )  # fmt: skip

    assert [hit.fact_id for hit in result.hits] == ["asked", "walks"]
    assert result.debug is not None
    assert "secret" not in {f.fact_id for f in result.debug.fused}
