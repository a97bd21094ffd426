"""Driving the product as a backend would: record the conversations, end their sessions, then ask
each question as the agent would in a later session; and the raw-turn baseline of bench/locomo.py.

Asking (docs/quality.md): a question is asked in the view of the user it is about (``route``):
``search_facts`` with that user_id, k = 10, default settings, exactly the call behind the
search_facts tool (its text is the tool's ``render`` of the same result), and the memory context
of a new session of that user (``on_session_start``: the question opens a session that has no
messages yet, so it has no session id to search with). A question asked in both views gets both
contexts and the two ranked lists interleaved to 10. Questions are asked as of a day after the
conversation's last session (``Conversation.asked_at``), so the ages the memory shows are the
conversation's, not the wall clock's.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bench import locomo
from bench.locomo_quality.data import (
    Conversation,
    Question,
    Side,
    dia_id_of,
    messages_for,
    session_id,
    slug,
)
from bench.locomo_quality.metrics import (
    answer_token_recall,
    evidence_recall,
    interleave,
    route,
    tokens,
)
from client.memory_client import MemoryClient
from client.tools import render
from memory.embedding.base import Embedder
from memory.models import AgentConfig, Fact, FactFilter
from memory.rag import search_facts
from memory.search_results import SearchHit, SearchResult
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore

TOP_K = 10
SIDES: tuple[Side, Side] = ("a", "b")


@dataclass
class Asked:
    """One question as the agent asked it, and what it got back."""

    sample_id: str
    question: Question
    views: list[str]  # user_ids asked as
    hits: list[SearchHit]
    sources: list[list[str]]  # per hit: the dia_ids of its source messages
    context: str  # the memory context(s), as the agent would put them in its prompt
    results: str  # the search_facts tool's text for the interleaved hits
    full_context_tokens: int

    @property
    def evidence_recall(self) -> float:
        return evidence_recall(self.question.evidence, (d for s in self.sources for d in s))

    @property
    def answer_token_recall(self) -> float | None:
        return answer_token_recall(self.question.answer, (h.content for h in self.hits))

    @property
    def context_tokens(self) -> int:
        return tokens(self.context) + tokens(self.results)


def sources_of(fact: Fact) -> list[str]:
    """The LoCoMo turns a fact was formed from (its provenance)."""
    return [dia_id_of(m) for m in fact.source_message_ids]


def transcript_tokens(conv: Conversation) -> int:
    """The whole (recorded) conversation as one prompt would hold it: 'speaker: text' lines."""
    return tokens("\n".join(f"{t.speaker}: {t.text}" for t in conv.turns))


async def record(memory: MemoryClient, conv: Conversation, *, hot: bool = True) -> int:
    """Every session, in time order, twice (one per speaker's perspective), turn by turn with a
    formation trigger after each agent turn (``hot``), then ended. Returns the sessions recorded.

    Without ``hot`` the backend forms at session end only: each session is one window (LoCoMo
    sessions are well under the window's bound), the same window on every run, so the prompts are
    the same and a recorded model's answers replay (``--model-cache``). With hot triggers a window
    ends wherever the workflow reads it while turns keep arriving, which varies with timing."""
    agent = conv.agent_id
    await memory.register_agent(AgentConfig(agent_id=agent, name=f"LoCoMo {conv.sample_id}"))
    recorded = 0
    for session in conv.sessions:
        for side in SIDES:
            sid = session_id(conv.sample_id, session.number, side)
            for message in messages_for(conv, session, side):
                await memory.record_messages(agent, sid, [message])
                if hot and message.role == "agent":
                    await memory.maybe_form_memories(agent, sid)
            await memory.on_session_end(agent, sid)
            recorded += 1
    return recorded


async def ask(memory: MemoryClient, conv: Conversation, number: int, q: Question) -> Asked:
    users = [slug(conv.speakers[i]) for i in route(q.text, conv.speakers)]
    ranked: list[list[SearchHit]] = []
    contexts: list[str] = []
    for user in users:
        result = await memory.search_facts(conv.agent_id, [q.text], user_id=user, top_k=TOP_K)
        ranked.append(result.hits)
        fresh = f"{conv.sample_id}-q{number}-{user}"  # a later session of this user
        contexts.append(await memory.on_session_start(conv.agent_id, fresh, user_id=user))
    hits = interleave(ranked, TOP_K, key=lambda h: h.fact_id)
    facts = {f.fact_id: f for f in await memory.store.get_facts([h.fact_id for h in hits])}
    return Asked(
        sample_id=conv.sample_id,
        question=q,
        views=users,
        hits=hits,
        sources=[sources_of(facts[h.fact_id]) if h.fact_id in facts else [] for h in hits],
        context="\n".join(c for c in contexts if c),
        results=render(SearchResult(hits=hits)),
        full_context_tokens=transcript_tokens(conv),
    )


def _stopped(at: datetime) -> Callable[[], datetime]:
    return lambda: at


async def ask_all(memory: MemoryClient, conversations: Sequence[Conversation]) -> list[Asked]:
    """Every question, asked as of its conversation's ``asked_at``."""
    asked = []
    clock = memory.clock
    try:
        for conv in conversations:
            memory.clock = _stopped(conv.asked_at)
            asked += [await ask(memory, conv, n, q) for n, q in enumerate(conv.questions, 1)]
    finally:
        memory.clock = clock
    return asked


async def count_facts(memory: MemoryClient, conv: Conversation) -> int:
    """Valid facts of the conversation's agent: agent scope and both speakers' user scope."""
    a, b = (slug(s) for s in conv.speakers)
    agent = conv.agent_id
    return await memory.store.count_facts(
        FactFilter(agent_id=agent, user_id=a)
    ) + await memory.store.count_facts(
        FactFilter(agent_id=agent, include_agent_scope=False, user_id=b)
    )


async def record_all(
    memory: MemoryClient, conversations: Sequence[Conversation], parallel: int, *, hot: bool = True
) -> int:
    """Conversations side by side (up to ``parallel``), each in its own time order."""
    gate = asyncio.Semaphore(parallel)

    async def one(conv: Conversation) -> int:
        async with gate:
            started = time.perf_counter()
            recorded = await record(memory, conv, hot=hot)
            print(
                f"  {conv.sample_id}: {len(conv.sessions)} sessions, {len(conv.turns)} turns "
                f"recorded and ended in {time.perf_counter() - started:.0f} s",
                flush=True,
            )
            return recorded

    return sum(await asyncio.gather(*(one(c) for c in conversations)))


# ---------------------------------------------------------------- the raw-turn baseline


@dataclass
class BaselineRow:
    category: int
    evidence_recall: float
    answer_token_recall: float | None


async def raw_turn_baseline(
    embedder: Embedder, conversations: Sequence[Conversation]
) -> list[BaselineRow]:
    """bench/locomo.py's store (every turn one fact, formed in its session) asked the same
    questions: hybrid search_facts, k = 10, default settings."""
    settings = Settings()
    memo = locomo.MemoEmbedder(embedder)
    raw = [
        locomo.Conversation(
            sample_id=c.sample_id, turns={t.dia_id: f"{t.speaker}: {t.text}" for t in c.turns}
        )
        for c in conversations
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "raw-turns.db")
        await store.setup()
        try:
            dia_of = await locomo.index(store, memo, raw)
            for conv, raw_conv in zip(conversations, raw, strict=True):
                for q in conv.questions:
                    result = await search_facts(
                        store, memo, settings, agent=locomo.agent_for(raw_conv), session=None,
                        user_id=None, queries=[q.text], top_k=TOP_K, now=locomo.NOW,
                        mode="hybrid",
                    )  # fmt: skip
                    found = [dia_of[h.fact_id] for h in result.hits]
                    rows.append(
                        BaselineRow(
                            category=q.category,
                            evidence_recall=evidence_recall(q.evidence, found),
                            answer_token_recall=answer_token_recall(
                                q.answer, (h.content for h in result.hits)
                            ),
                        )
                    )
        finally:
            await store.close()
    return rows
