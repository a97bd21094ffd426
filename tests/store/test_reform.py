"""A degraded window re-formed (`mnemos degraded reform`), on both backends: the decision step's
fallback left two contradicting facts valid; re-forming the window decides again against what was
stored before, and the agent ends with one valid fact, the cursor where it was."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import BaseModel

from memory.deps import Deps
from memory.errors import InvalidInputError, MalformedOutputError
from memory.llm.base import LLMRequest, LLMResult
from memory.llm.heuristic import HeuristicProvider
from memory.model_check import CheckReport, form_session
from memory.models import AgentConfig, FactFilter, MessageIn
from memory.reform import reform
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


class UndecidedHeuristic(HeuristicProvider):
    """The offline model, except that every dedup decision is cut at the token cap."""

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        if request.task == "decide_facts":
            raise MalformedOutputError("output hit the token limit (finish_reason=length)")
        return await super().generate_structured(request, schema)


def said(i: int, text: str) -> MessageIn:
    return MessageIn(
        message_id=f"b{i}", role="user", content=text, created_at=T0 + timedelta(minutes=i),
        user_id="kay",
    )  # fmt: skip


async def _budgets(store: MemoryStore) -> list[str]:
    valid = await store.recent_facts(
        FactFilter(agent_id="eve", user_id="kay"), since=T0 - timedelta(days=1), limit=100
    )
    return sorted(f.content for f in valid if "budget" in f.content)


async def test_reforming_a_degraded_window_converges_on_one_fact(store: MemoryStore) -> None:
    embedder = WordHashEmbedder()
    deps = Deps(settings=Settings(), store=store, llm=HeuristicProvider(), embedder=embedder)
    broken = Deps(settings=Settings(), store=store, llm=UndecidedHeuristic(), embedder=embedder)
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))

    async def record(session: str, messages: list[MessageIn]) -> None:
        await store.record_messages(
            session, "eve", messages, weights={"user": 1.0}, chars_per_token=4.0, now=T0
        )

    await record("s0", [said(0, "The festival budget is $50,000.")])
    await form_session(deps, "eve", "s0", CheckReport())
    await record("s1", [said(1, "The festival budget is $65,000.")])
    degraded = CheckReport()
    await form_session(broken, "eve", "s1", degraded)
    assert [line.split(" ")[1] for line in degraded.degraded] == ["decide_facts:"]
    assert len(await _budgets(store)) == 2  # the fallback: added unmerged

    with pytest.raises(InvalidInputError, match="not a formed range"):
        await reform(deps, "eve", "s1", 0, 5)
    again = await reform(deps, "eve", "s1", 0, 1)

    assert again.report.steps["decide_facts"].valid == 1
    assert [b for b in await _budgets(store)] == ["The festival budget is $65,000."]
    state = await store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 1


class ReadsNoTokens(HeuristicProvider):
    """The offline model, except that a message holding "TOKEN" cannot be extracted."""

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        shown = getattr(request.task_input, "messages", [])
        if request.task == "extract_facts" and any("TOKEN" in m.content for m in shown):
            raise MalformedOutputError("output does not fit the schema")
        return await super().generate_structured(request, schema)


async def test_reforming_a_range_splits_it_and_reports_what_stays_unusable(
    store: MemoryStore,
) -> None:
    """A range whose one message the model still cannot read: re-forming it splits it, forms the
    rest again (the facts already stored are duplicates, not written twice) and reports that one."""
    embedder = WordHashEmbedder()
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    texts = ["My locker code is 4411.", "TOKEN", "My email is kay@example.com.", "I live in Oslo."]
    await store.record_messages(
        "s1", "eve", [said(i, t) for i, t in enumerate(texts)], weights={"user": 1.0},
        chars_per_token=4.0, now=T0,
    )  # fmt: skip
    deps = Deps(settings=Settings(), store=store, llm=ReadsNoTokens(), embedder=embedder)
    report = CheckReport()
    await form_session(deps, "eve", "s1", report)
    assert [line.split(" ")[1] for line in report.degraded] == ["extract_facts:"]

    again = await reform(deps, "eve", "s1", 0, 4)

    assert [(s.after_seq, s.upto_seq) for s in again.still_degraded] == [(1, 2)]
    assert again.commit.facts_added == 0
    valid = await store.recent_facts(
        FactFilter(agent_id="eve", user_id="kay"), since=T0 - timedelta(days=1), limit=100
    )
    assert sorted(next(w for w in ("4411", "kay@", "Oslo") if w in f.content) for f in valid) == [
        "4411",
        "Oslo",
        "kay@",
    ]
    state = await store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 4


async def test_reforming_the_window_of_a_user_forgotten_once_writes_its_facts(
    store: MemoryStore,
) -> None:
    """kay asked to be forgotten once and came back (erasure epoch 1): the re-formed window's
    commit carried no epochs, and was discarded as if loaded before that erasure."""
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    await store.forget_user("kay", agent_id="eve", at=T0 - timedelta(days=1))
    await store.record_messages(
        "s1", "eve", [said(0, "TOKEN: my locker code is 4411.")], weights={"user": 1.0},
        chars_per_token=4.0, now=T0,
    )  # fmt: skip
    embedder = WordHashEmbedder()
    unread = Deps(settings=Settings(), store=store, llm=ReadsNoTokens(), embedder=embedder)
    await form_session(unread, "eve", "s1", CheckReport())  # passed over
    deps = Deps(settings=Settings(), store=store, llm=HeuristicProvider(), embedder=embedder)

    again = await reform(deps, "eve", "s1", 0, 1)

    assert (again.commit.facts_added, again.commit.discarded_for_erasure) == (1, False)
