"""Review of the second look at a passed-over message (memory/pipeline/rereads.py): what a
message read alone must not change (the scope rules), what it must not cost (the step's
timeout), and what it must not displace (the window's own answer)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory.deps import Deps
from memory.llm.base import LLMRequest
from memory.model_check import CheckReport, form_session
from memory.model_check_record import Recorder, StepFigures
from memory.models import AgentConfig, MessageIn, StoredMessage
from memory.pipeline import commit, facts, rereads, window
from memory.pipeline.types import FormationRequest, NewFact, Window
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts
from memory.settings import FactSettings, RetrySettings, Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import Reply, ScriptedLLM, WordHashEmbedder
from tests.pipeline.test_rereads import (
    CORRECTION,
    LISBON,
    NO_REFLECTIONS,
    WINDOW_ANSWER,
    _messages,
)

AT = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
NOTHING = ExtractedFacts(facts=[])


def _said(n: int, user: str | None, text: str) -> MessageIn:
    return MessageIn(
        message_id=f"r{n}",
        role="user",
        content=text,
        created_at=AT + timedelta(minutes=n),
        user_id=user,
        name=user.capitalize() if user else None,
    )


async def _window(
    tmp_path: Path, said: list[MessageIn], settings: Settings, *, group: str | None = None
) -> tuple[SQLiteStore, Window]:
    """The window of ``said``; with ``group``, a group chat's: that person spoke before, in a
    window formed already (a window never spans the moment a session became a group,
    memory/group_start.py: from the start, what the first person said would form alone)."""
    store = SQLiteStore(tmp_path / "m.db")
    await store.setup()
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    req = FormationRequest(session_id="s1", agent_id="eve", force=True)
    if group is not None:
        await _formed(store, settings, req, _said(0, group or None, "Hello everyone."))
    await store.record_messages(
        "s1", "eve", said, weights={"user": 1.0}, chars_per_token=4.0, now=AT
    )
    w = await window.load_window(store, settings, req)
    assert w is not None
    return store, w


async def _formed(
    store: SQLiteStore, settings: Settings, req: FormationRequest, message: MessageIn
) -> None:
    """``message`` recorded and its window committed with nothing formed: the cursor past it."""
    await store.record_messages(
        "s1", "eve", [message], weights={"user": 1.0}, chars_per_token=4.0, now=AT
    )
    w = await window.load_window(store, settings, req)
    assert w is not None
    deps = Deps(settings=settings, store=store, llm=ScriptedLLM(), embedder=WordHashEmbedder())
    await commit.commit(deps, w, [], [], [], AT)


async def _extracted(
    tmp_path: Path,
    said: list[MessageIn],
    *answers: Reply,
    settings: Settings | None = None,
    group: str | None = None,
) -> tuple[list[NewFact], Window, ScriptedLLM]:
    settings = settings or Settings(facts=FactSettings(reread_messages=3))
    store, w = await _window(tmp_path, said, settings, group=group)
    llm = ScriptedLLM()
    llm.script("extract_facts", *answers)
    deps = Deps(settings=settings, store=store, llm=llm, embedder=WordHashEmbedder())
    try:
        out = await facts.extract_facts(deps, w)
    finally:
        await store.close()
    return out.facts, w, llm


PROMOTED = ExtractedFacts(
    facts=[
        ExtractedFact(
            content="Alice was promoted to CTO of Acme Robotics.", scope="agent", sources=[1]
        )
    ]
)


async def test_a_message_read_alone_naming_another_user_of_a_group_is_not_agent_memory(
    tmp_path: Path,
) -> None:
    # A group chat: no user memory. In the window, an agent-scope fact naming the user Alice is
    # hers, so dropped (it is nobody else's to read); read alone, Bob's message must not make
    # it agent memory, which every user of the agent reads.
    said = [
        _said(1, "alice", "Hi all, quick update from me."),
        _said(2, "bob", "Big news: Alice was promoted to CTO of Acme Robotics in 2026!"),
    ]
    kept, w, llm = await _extracted(tmp_path, said, NOTHING, PROMOTED, group="bob")
    assert w.user_id is None and w.fact_scopes == ("agent",)
    assert len(llm.calls("extract_facts")) == 2  # Bob's message was read again alone
    assert [f.content for f in kept if "Alice" in f.content] == []


async def test_a_guests_message_read_alone_naming_the_user_is_not_agent_memory(
    tmp_path: Path,
) -> None:
    # A user and a guest (no user id) make a group: what the guest says of Alice is hers, so
    # not kept (no user memory here), as in the window; never agent memory.
    said = [
        _said(1, "alice", "Hello, my colleague is with me today."),
        _said(2, None, "Alice was promoted to CTO of Acme Robotics in 2026, by the way."),
    ]
    kept, w, llm = await _extracted(tmp_path, said, NOTHING, PROMOTED, group="")  # the guest
    assert w.user_id is None
    assert len(llm.calls("extract_facts")) == 2
    assert kept == []


async def test_the_second_looks_end_well_within_the_steps_timeout(tmp_path: Path) -> None:
    # Each call takes 0.4 s of a 1 s step: the window's answer and three second looks would
    # take 1.6 s, and the step would time out and be asked again, window and all, until its
    # attempts ran out and the window was formed with nothing.
    async def slow(_: LLMRequest) -> ExtractedFacts:
        await asyncio.sleep(0.4)
        return NOTHING

    said = [_said(n, "alice", f"The code for door {n} is {n}{n}{n}{n}.") for n in (1, 2, 3, 4)]
    settings = Settings(
        facts=FactSettings(reread_messages=3),
        retries=RetrySettings(llm_timeout_seconds=1.0, llm_heartbeat_seconds=0.5),
    )
    started = time.perf_counter()
    await _extracted(tmp_path, said, slow, slow, slow, slow, settings=settings)
    assert time.perf_counter() - started < 0.9


def _stored(seq: int, text: str) -> StoredMessage:
    return StoredMessage(
        session_id="s1",
        seq=seq,
        message_id=f"m{seq}",
        role="user",
        content=text,
        created_at=AT + timedelta(minutes=seq),
        user_id="alice",
        name="Alice",
    )


def _fact(index: int, text: str, *sources: str) -> NewFact:
    return NewFact(index=index, content=text, scope="agent", source_message_ids=sources)


def test_the_cap_never_drops_the_windows_own_answer_for_a_second_look() -> None:
    # The window's answer holds the correction (m4); a second look at m2 finds two facts. At a
    # cap of 3 the correction must stay: the decision would otherwise keep the stale budget.
    messages = [_stored(n, f"message {n}") for n in (1, 2, 3, 4)]
    first = [_fact(0, "The venue is the Hub.", "m1"), _fact(1, "The budget is $65,000.", "m4")]
    again = [(messages[1], [_fact(0, "The budget is $70,000.", "m2"), _fact(1, "Z", "m2")])]
    out = rereads.merged(first, again, messages, limit=3)
    assert [f.content for f in out] == [
        "The venue is the Hub.",
        "The budget is $70,000.",
        "The budget is $65,000.",
    ]


def test_a_fact_that_cited_nothing_stands_as_said_at_the_end_of_the_window() -> None:
    # A fact citing no message is said by the end of the window (memory/pipeline/sources.py):
    # a second look at an earlier message goes before it, not after.
    messages = [_stored(n, f"message {n}") for n in (1, 2)]
    first = [_fact(0, "The budget is $65,000.")]
    again = [(messages[0], [_fact(0, "The budget is $70,000.", "m1")])]
    out = rereads.merged(first, again, messages, limit=10)
    assert [f.content for f in out] == ["The budget is $70,000.", "The budget is $65,000."]


async def test_a_message_whose_facts_the_rules_dropped_is_not_asked_about_again(
    tmp_path: Path,
) -> None:
    # A group chat keeps no user memory: the answer stated both messages, as user facts, and
    # the rules dropped them. Read alone, each would be stated and dropped again: a model call
    # for nothing (each ~15-35 s on a CPU, within the step's timeout).
    said = [
        _said(1, "alice", "I moved to Berlin in 2024."),
        _said(2, "bob", "Nice, I have lived in Paris since 2019."),
    ]
    answer = ExtractedFacts(
        facts=[
            ExtractedFact(
                content="Alice moved to Berlin in 2024.", scope="user", speaker="alice", sources=[1]
            ),
            ExtractedFact(
                content="Bob has lived in Paris since 2019.",
                scope="user",
                speaker="bob",
                sources=[2],
            ),
        ]
    )
    kept, w, llm = await _extracted(tmp_path, said, answer, NOTHING, NOTHING, group="bob")
    assert w.fact_scopes == ("agent",) and kept == []
    assert len(llm.calls("extract_facts")) == 1


async def test_what_a_second_look_answers_and_is_not_kept_is_counted_as_dropped(
    tmp_path: Path,
) -> None:
    said = [
        _said(1, "alice", "The venue is the Hub."),
        _said(2, "alice", "Sorry: the budget is $65,000, not $70,000."),
    ]
    window_answer = ExtractedFacts(
        facts=[ExtractedFact(content="The venue is the Hub.", scope="agent", sources=[1])]
    )
    again = ExtractedFacts(
        facts=[
            ExtractedFact(content="The budget is $65,000.", scope="agent", sources=[1]),
            ExtractedFact(content="The venue is the Hub.", scope="agent", sources=[1]),
        ]
    )
    settings = Settings(facts=FactSettings(reread_messages=3))
    store, w = await _window(tmp_path, said, settings)
    llm = ScriptedLLM()
    llm.script("extract_facts", window_answer, again)
    deps = Deps(settings=settings, store=store, llm=llm, embedder=WordHashEmbedder())
    try:
        out = await facts.extract_facts(deps, w)
    finally:
        await store.close()
    assert [f.content for f in out.facts] == ["The venue is the Hub.", "The budget is $65,000."]
    assert out.dropped == 1  # the repeat of the venue
    assert len(out.llm) == 2


async def test_check_model_counts_the_items_of_every_answer_the_step_kept(
    tmp_path: Path,
) -> None:
    llm = ScriptedLLM({"extract_reflections": NO_REFLECTIONS})
    llm.script("extract_facts", WINDOW_ANSWER, CORRECTION, LISBON)
    recorder = Recorder(llm)
    store = SQLiteStore(tmp_path / "m.db")
    await store.setup()
    settings = Settings(facts=FactSettings(reread_messages=3))
    deps = Deps(settings=settings, store=store, llm=recorder, embedder=WordHashEmbedder())
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    await store.record_messages(
        "s1", "eve", _messages(), weights={"user": 1.0}, chars_per_token=4.0, now=AT
    )
    try:
        await form_session(deps, "eve", "s1", CheckReport(recorder=recorder))
    finally:
        await store.close()
    figures = StepFigures.of(c for c in recorder.calls if c.task == "extract_facts")
    assert (figures.items, figures.kept) == (4, 4)  # 2 + 1 + 1 answered, all kept


def test_a_fact_citing_several_messages_stands_where_it_was_complete() -> None:
    # "The budget is $65,000" cites the first figure (m1) and its correction (m3): it was
    # complete at m3 (its said_at, memory/pipeline/sources.py). What a second look finds in m2
    # goes before it: after it, the decision would read $70,000 as the later word.
    messages = [_stored(n, f"message {n}") for n in (1, 2, 3)]
    first = [_fact(0, "The budget is $65,000.", "m1", "m3")]
    again = [(messages[1], [_fact(0, "The budget was raised to $70,000.", "m2")])]
    out = rereads.merged(first, again, messages, limit=10)
    assert [f.content for f in out] == [
        "The budget was raised to $70,000.",
        "The budget is $65,000.",
    ]
