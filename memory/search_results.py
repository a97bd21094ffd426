"""What search_facts answers (memory.rag): the hits, and on request how each was found."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory.fusion import Source
from memory.models import FactScope

SearchMode = Literal["hybrid", "vector", "text"]


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class SearchHit(_Out):
    fact_id: str
    content: str
    scope: FactScope
    age: str  # how long ago it was said ("3d ago"), or stored when it records no said_at
    score: float  # ranking score in (0, 1]: 1 = best of every list searched (and of its session)
    cosine: float | None  # best cosine to a query (None: not among the vector hits)
    bm25: float | None  # best text score (None: no query word matched)
    updated_at: datetime
    said_at: datetime | None = None  # when it was said: its latest source message (None: unknown)
    # The UTC offset that message was sent with: the speaker's clock its day is shown on (None:
    # UTC, or unknown; memory.said).
    said_utc_offset_minutes: int | None = None
    # Where it was said (the fact's provenance, as GET /facts/{id} gives it to the same caller):
    # a backend can cite or show those messages. Not in the tool's text: the model has no use
    # for ids, and each would cost it tokens.
    source_session_id: str | None = None
    source_message_ids: tuple[str, ...] = ()


class Candidate(_Out):
    fact_id: str
    score: float  # the store's score: cosine or BM25
    rank: int | None  # 1-based among the candidates that passed; None when below the threshold


class CandidateList(_Out):
    query: str
    source: Source
    store_query: str  # what the store was asked (text: the query's content words)
    took_ms: float
    candidates: list[Candidate]


class FusedCandidate(_Out):
    fact_id: str
    rrf: float  # classic RRF: the gate
    score: float  # the ranking score, session prior included
    session_prior: float  # what the fact's session lent it (0: not a best hit's session)
    passed: bool  # rrf reached the threshold
    returned: bool  # among the top_k returned


class SearchDebug(_Out):
    mode: SearchMode
    embedding_model: str | None  # whose calibration set the gates (None: text mode)
    queries: list[str]
    top_k: int
    candidates_per_list: int
    thresholds: dict[str, float]  # the gates applied: semantic (cosine), text (BM25), rrf
    timings_ms: dict[str, float]
    lists: list[CandidateList]
    fused: list[FusedCandidate]


class SearchResult(_Out):
    hits: list[SearchHit]
    debug: SearchDebug | None = None
