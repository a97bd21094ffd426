"""A relative date counts in the speaker's calendar: "tomorrow" said on Tuesday 7 May at 22:30 in
Chicago (-05:00, 03:30 UTC on the 8th) is 8 May, whichever provider extracted it (the prompts still show
the model UTC times: a model that resolves a date itself reads it in UTC). A message stored before offsets were
kept (None) counts in UTC, as before. When a fact was said stays the UTC instant, with the
speaker's offset beside it: the day the agent reads it was said on is the speaker's, 7 May."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from client.tools import render
from memory.context import assemble_context
from memory.deps import Deps
from memory.llm.base import LLMProvider
from memory.llm.heuristic import HeuristicProvider
from memory.model_check import CheckReport, form_session
from memory.models import AgentConfig, Fact, FactFilter, MessageIn
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts
from memory.prompts.extract_reflections import ExtractedReflections
from memory.rag import search_facts
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import ScriptedLLM, WordHashEmbedder

CHICAGO = timezone(timedelta(hours=-5))
TUESDAY_NIGHT = datetime(2024, 5, 7, 22, 30, tzinfo=CHICAGO)  # 2024-05-08 03:30 UTC
SAID = "I am flying to Paris tomorrow for my sister's wedding."


async def _form(tmp_path: Path, llm: LLMProvider, *, forget_offsets: bool = False) -> list[Fact]:
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    await store.setup()
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    messages = [
        MessageIn(message_id="m1", role="user", content=SAID, created_at=TUESDAY_NIGHT,
                  user_id="alice", name="Alice"),
        MessageIn(message_id="m2", role="agent", content="Have a great trip!",
                  created_at=TUESDAY_NIGHT + timedelta(seconds=30), name="Eve"),
    ]  # fmt: skip
    now = TUESDAY_NIGHT + timedelta(minutes=1)
    await store.record_messages("s1", "eve", messages, weights={}, chars_per_token=4.0, now=now)
    if forget_offsets:  # as a store of the previous version holds them
        await store.close()
        with closing(sqlite3.connect(path)) as conn, conn:
            conn.execute("UPDATE messages SET utc_offset_minutes = NULL")
        store = SQLiteStore(path)
        await store.setup()
    deps = Deps(settings=Settings(), store=store, llm=llm, embedder=WordHashEmbedder())
    report = CheckReport()
    await form_session(deps, "eve", "s1", report)
    assert report.degraded == []
    flt = FactFilter(agent_id="eve", user_id="alice")
    try:
        return await store.recent_facts(flt, since=datetime(2000, 1, 1, tzinfo=UTC), limit=50)
    finally:
        await store.close()


def _scripted() -> ScriptedLLM:
    """A model that kept "tomorrow" as it was said, citing the message."""
    llm = ScriptedLLM()
    fact = ExtractedFact(
        content="Alice is flying to Paris tomorrow", scope="user", speaker="alice", sources=[1]
    )
    llm.script("extract_facts", ExtractedFacts(facts=[fact]))
    empty = ExtractedReflections(agent_reflections=[], user_reflections=[], session_reflections=[])
    llm.script("extract_reflections", empty)
    return llm


async def test_the_heuristic_counts_tomorrow_in_the_speakers_calendar(tmp_path: Path) -> None:
    [fact] = await _form(tmp_path, HeuristicProvider())
    assert "to Paris on 8 May 2024" in fact.content
    assert fact.said_at == TUESDAY_NIGHT and fact.said_at.utcoffset() == timedelta(0)


async def test_a_models_tomorrow_counts_in_the_speakers_calendar(tmp_path: Path) -> None:
    llm = _scripted()
    [fact] = await _form(tmp_path, llm)
    assert fact.content == "Alice is flying to Paris on 8 May 2024"
    assert (fact.source_message_ids, fact.said_at) == (("m1",), TUESDAY_NIGHT)


async def test_a_message_stored_without_an_offset_counts_in_utc(tmp_path: Path) -> None:
    llm = _scripted()
    [fact] = await _form(tmp_path, llm, forget_offsets=True)
    assert fact.content == "Alice is flying to Paris on 9 May 2024"  # 03:30 UTC on the 8th
    heuristic = await _form(tmp_path / "h", HeuristicProvider(), forget_offsets=True)
    assert "to Paris on 9 May 2024" in heuristic[0].content


async def _what_the_agent_reads(path: Path) -> tuple[str, str]:
    """The memory context of Alice's next turn, and the search_facts tool's answer about Paris."""
    store = SQLiteStore(path)
    await store.setup()
    try:
        agent, session = await store.get_agent("eve"), await store.get_session("s1")
        assert agent is not None and session is not None
        now = TUESDAY_NIGHT + timedelta(minutes=5)
        context = await assemble_context(
            store, Settings(), agent=agent, session=session, user_id="alice", now=now
        )
        found = await search_facts(
            store, WordHashEmbedder(), Settings(), agent=agent, session=session,
            user_id="alice", queries=["Alice is flying to Paris on 8 May 2024"], now=now,
        )  # fmt: skip
        return context, render(found)
    finally:
        await store.close()


async def test_the_agent_reads_the_day_said_on_the_speakers_calendar(tmp_path: Path) -> None:
    """Said on Tuesday evening in Chicago: "on 8 May" is the next day, and was said on the 7th
    (in UTC, the 8th: the trip would seem to be the day it was said)."""
    [fact] = await _form(tmp_path, _scripted())
    context, tool = await _what_the_agent_reads(tmp_path / "m.db")
    line = "Alice is flying to Paris on 8 May 2024 (said 7 May 2024, 5m ago)"
    assert line in context
    assert line in tool
    assert (fact.said_at, fact.said_utc_offset_minutes) == (TUESDAY_NIGHT, -300)


async def test_a_fact_from_a_message_stored_without_an_offset_reads_in_utc(tmp_path: Path) -> None:
    [fact] = await _form(tmp_path, _scripted(), forget_offsets=True)
    assert fact.said_utc_offset_minutes is None
    context, _ = await _what_the_agent_reads(tmp_path / "m.db")
    assert "Alice is flying to Paris on 9 May 2024 (said 8 May 2024, 5m ago)" in context


def test_offsets_in_whole_minutes_and_back() -> None:
    from memory.dates import in_offset, offset_minutes  # here: the tests above run without them

    assert offset_minutes(TUESDAY_NIGHT) == -300
    assert offset_minutes(TUESDAY_NIGHT.astimezone(UTC)) == 0
    local = in_offset(TUESDAY_NIGHT.astimezone(UTC), -300)
    assert (local, local.date(), local.utcoffset()) == (
        TUESDAY_NIGHT,
        TUESDAY_NIGHT.date(),
        timedelta(hours=-5),
    )
    assert in_offset(TUESDAY_NIGHT, None).tzinfo is UTC and in_offset(TUESDAY_NIGHT, 0).hour == 3
