"""Fusing the ranked lists of hybrid search: classic RRF decides what survives (002's 0.015 gate),
weighted min-max-normalised scores decide the order, the session prior lets the best hits'
sessions lift the other candidates formed there (measured on LoCoMo with bench/locomo.py), and
the identifier tier puts the candidates holding a query's exact identifier first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from memory.identifiers import held
from memory.models import ScoredFact

Source = Literal["vector", "text"]


@dataclass(frozen=True)
class RankedList:
    """One store search's candidates that passed its threshold, best first."""

    query_index: int
    source: Source
    facts: Sequence[ScoredFact]


@dataclass(frozen=True)
class Fused:
    hit: ScoredFact
    rrf: float
    score: float
    session_prior: float = 0.0  # what the fact's session lent it (see ``with_session_prior``)
    identifiers: int = 0  # how many of the queries' identifiers it holds (``with_identifier_tier``)


def merged(lists: Sequence[RankedList]) -> list[RankedList]:
    """One list per query and method: a query's text searches (its content words, and its
    identifiers alone: ``memory.query_words.text_queries``) are one list, each fact at the best
    score either gave it, so the text half weighs the same whether it took one search or two."""
    facts: dict[tuple[int, Source], dict[str, ScoredFact]] = {}
    for ranked in lists:
        best = facts.setdefault((ranked.query_index, ranked.source), {})
        for scored in ranked.facts:
            fid = scored.fact.fact_id
            if fid not in best or scored.score > best[fid].score:
                best[fid] = scored
    return [
        RankedList(index, source, sorted(found.values(), key=lambda s: -s.score))
        for (index, source), found in facts.items()
    ]


def rrf_scores(lists: Sequence[RankedList], k: int) -> dict[str, float]:
    """Classic reciprocal rank fusion: Σ over lists of 1 / (k + rank), ranks from 1."""
    scores: dict[str, float] = {}
    for ranked in lists:
        for rank, scored in enumerate(ranked.facts, start=1):
            fid = scored.fact.fact_id
            scores[fid] = scores.get(fid, 0.0) + 1.0 / (k + rank)
    return scores


# What the last candidate of a list keeps: it passed its gate, so it is a hit and never scores 0
# (plain min-max gave it 0 and hits showed "score 0.000"). Recall on LoCoMo is the same within
# ±0.005 at @5/@10/@20 for floors 0–0.1.
FLOOR = 0.05


def normalized(facts: Sequence[ScoredFact]) -> dict[str, float]:
    """Min-max over the list into [FLOOR, 1]: best 1, worst FLOOR (all 1 when scores are equal)."""
    if not facts:
        return {}
    scores = [f.score for f in facts]
    high, span = max(scores), max(scores) - min(scores)
    return {
        f.fact.fact_id: 1 - (1 - FLOOR) * (high - f.score) / span if span > 0 else 1.0
        for f in facts
    }


def fuse(
    lists: Sequence[RankedList],
    *,
    k: int,
    weights: Mapping[Source, float],
    min_rrf: float,
    exact: frozenset[str] = frozenset(),
) -> list[Fused]:
    """Deduplicated candidates whose classic RRF reaches ``min_rrf``, or which hold one of the
    queries' identifiers ``exact``, best first.

    Why the identifiers pass: the gate drops weak matches, and a fact holding the exact number
    or code asked about is the one meant (``with_identifier_tier``). Found by the identifier's
    own text search but merged into the text list below the facts that share the query's other
    words ("Is it true room 3 keys are at the desk?" among 40 "My room N keys are at the desk."),
    it would rank past the gate and never reach its tier.

    Ranking score, in (0, 1]: per query, Σ over its lists of weight × min-max-normalised score
    (weights scaled to sum to 1; a fact absent from a list gets 0 there), and per fact the best
    over queries — each query is its own question, so a fact that answers one query well is not
    outranked by one that half-matches several. On LoCoMo this beats classic RRF by 5–7 points of
    recall@5: ranks throw away how far apart the candidates are, and BM25's gaps are informative.
    """
    gate = rrf_scores(lists, k)
    total = sum(weights[source] for source in {r.source for r in lists}) or 1.0
    per_query: dict[tuple[int, str], float] = {}
    first: dict[str, ScoredFact] = {}
    for ranked in lists:
        share = weights[ranked.source] / total
        for fid, value in normalized(ranked.facts).items():
            key = (ranked.query_index, fid)
            per_query[key] = per_query.get(key, 0.0) + share * value
        for scored in ranked.facts:
            first.setdefault(scored.fact.fact_id, scored)
    best: dict[str, float] = {}
    for (_, fid), value in per_query.items():
        best[fid] = max(best.get(fid, 0.0), value)
    fused = [
        Fused(first[f], gate[f], best[f])
        for f in first
        if gate[f] >= min_rrf or (exact and held(first[f].fact.content, exact))
    ]
    fused.sort(key=lambda x: (-x.score, -x.rrf, x.hit.fact.fact_id))
    return fused


def with_session_prior(fused: Sequence[Fused], *, weight: float, hits: int) -> list[Fused]:
    """Each candidate gains ``weight`` × the best score among the first ``hits`` candidates formed
    in its session, and the sum is scaled back into (0, 1]; best first again.

    Why: a question is mostly about one conversation, and what answers it often sits beside the
    best match without sharing its words ("5 years already!" after "how long have you been
    married?"). A session that holds one of the very best hits makes its other candidates more
    likely to matter, so they move up among candidates that scored about the same. Only
    candidates already found (and filtered by scope) move: the prior never adds a fact, and it
    reads nothing but the candidates' own ``source_session_id``. A fact with no session (an
    import) is a session of its own, so every one of the best hits keeps its score exactly. On
    the LoCoMo dev split it lifts hybrid recall@10 by about 4 points (bench/locomo.py; chosen on
    the even-numbered questions, see README "Benchmarks").
    """
    if weight <= 0 or hits <= 0 or not fused:
        return list(fused)
    prior: dict[str, float] = {}
    for f in fused[:hits]:
        key = _session_key(f)
        prior[key] = max(prior.get(key, 0.0), f.score)
    lifted = []
    for f in fused:
        gain = weight * prior.get(_session_key(f), 0.0)
        lifted.append(Fused(f.hit, f.rrf, (f.score + gain) / (1 + weight), round(gain, 6)))
    lifted.sort(key=lambda x: (-x.score, -x.rrf, x.hit.fact.fact_id))
    return lifted


def with_identifier_tier(fused: Sequence[Fused], wanted: frozenset[str]) -> list[Fused]:
    """The candidates holding more of the queries' identifiers (``memory.identifiers``: keys such
    as "4711" or "a17") first; within a tier, the fused order. A candidate moved up takes the best
    score of those it passed (``_scores_in_order``): the scores follow the order.

    Why a tier and not one more weighted term: a fact that holds the exact number or code asked
    about is the one meant, however its words and vector compare. Fused scores cannot say so:
    among 10,000 facts "My favourite number {i} is {v}." every vector is about as close to the
    query as every other, and the vector list's head carries 0.4 of the score whichever numbers
    it holds. A tier needs no weight tuned against that; and a query without identifiers (almost
    every conversational question: dates, times and durations are not identifiers) keeps its
    order exactly. Only candidates already found within the turn's scopes move.
    """
    if not wanted or not fused:
        return list(fused)
    tiered = [
        Fused(f.hit, f.rrf, f.score, f.session_prior, held(f.hit.fact.content, wanted))
        for f in fused
    ]
    tiered.sort(key=lambda x: -x.identifiers)  # stable: the fused order within a tier
    return _scores_in_order(tiered)


def _scores_in_order(ranked: Sequence[Fused]) -> list[Fused]:
    """Each candidate's score raised to the best score of those it outranks, so that scores never
    increase down the list: a client that keeps the hits above a score, or sorts them by it,
    keeps the tier's order. Without a tier move the fused order is the score order: no change."""
    floor = 0.0
    raised: list[Fused] = []
    for f in reversed(ranked):
        floor = max(floor, f.score)
        raised.append(replace(f, score=floor) if f.score < floor else f)
    return raised[::-1]


def _session_key(f: Fused) -> str:
    """The fact's session, or the fact alone when it has none (it then lends only to itself)."""
    fact = f.hit.fact
    return f"s:{fact.source_session_id}" if fact.source_session_id else f"f:{fact.fact_id}"
