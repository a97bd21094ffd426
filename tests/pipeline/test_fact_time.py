"""Facts stand on their own in time (#20): each records when it was said (its latest source
message), and a relative date is resolved against that, never the wall clock, whichever
provider extracted it: the offline heuristic, or a model that kept "yesterday" as it was said."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory.deps import Deps
from memory.llm.base import LLMProvider
from memory.llm.heuristic import HeuristicProvider
from memory.model_check import CheckReport, form_session
from memory.models import AgentConfig, Fact, FactFilter, MessageIn, Role
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts
from memory.prompts.extract_reflections import ExtractedReflections
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import ScriptedLLM, WordHashEmbedder

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday, long before the tests run


def _message(i: int, text: str, role: Role = "user") -> MessageIn:
    return MessageIn(
        message_id=f"d1-{i}",
        role=role,
        content=text,
        created_at=SAID + timedelta(seconds=30 * i),
        user_id="caroline" if role == "user" else None,
        name="Caroline" if role == "user" else "Mel",
    )


async def _form(
    tmp_path: Path, llm: LLMProvider, messages: list[MessageIn] | None = None
) -> list[Fact]:
    store = SQLiteStore(tmp_path / "m.db")
    await store.setup()
    deps = Deps(settings=Settings(), store=store, llm=llm, embedder=WordHashEmbedder())
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    messages = messages or [
        _message(0, "Hey Mel! Good to see you!"),
        _message(1, "Hey Caroline! How have you been?", role="agent"),
        _message(2, "I went to a LGBTQ support group yesterday and it was so powerful."),
        _message(3, "Next month I'm having an art show with my paintings."),
    ]
    now = max(m.created_at for m in messages)
    await store.record_messages(
        "s1", "eve", messages, weights={"user": 1.0}, chars_per_token=4.0, now=now
    )
    report = CheckReport()
    await form_session(deps, "eve", "s1", report)
    assert report.degraded == []
    flt = FactFilter(agent_id="eve", user_id="caroline")
    try:
        return await store.recent_facts(flt, since=datetime(2000, 1, 1, tzinfo=UTC), limit=50)
    finally:
        await store.close()


async def test_the_heuristic_resolves_relative_dates_against_the_message(tmp_path: Path) -> None:
    facts = {f.source_message_ids: f for f in await _form(tmp_path, HeuristicProvider())}
    group = facts[("d1-2",)]
    assert "on 7 May 2023" in group.content and "yesterday" not in group.content
    assert group.said_at == SAID + timedelta(seconds=60)
    show = facts[("d1-3",)]
    assert show.content == "In June 2023 Caroline is having an art show with Caroline's paintings."


async def test_a_models_relative_date_is_resolved_against_its_sources(tmp_path: Path) -> None:
    """What a small model answers when it ignores "write absolute dates" (the real model's
    answers in tests/realmodel do the same): its citation dates the fact."""
    llm = ScriptedLLM()
    llm.script(
        "extract_facts",
        ExtractedFacts(
            facts=[
                ExtractedFact(
                    content="Caroline went to a LGBTQ support group yesterday",
                    scope="user",
                    speaker="caroline",
                    sources=[3],
                )
            ]
        ),
    )
    empty = ExtractedReflections(agent_reflections=[], user_reflections=[], session_reflections=[])
    llm.script("extract_reflections", empty)
    [fact] = await _form(tmp_path, llm)
    assert fact.content == "Caroline went to a LGBTQ support group on 7 May 2023"
    assert (fact.source_message_ids, fact.said_at) == (("d1-2",), SAID + timedelta(seconds=60))


async def test_a_relative_date_is_resolved_against_the_message_that_says_it(
    tmp_path: Path,
) -> None:
    """Cited with a later message, "tomorrow" is still the day after the message that said it."""
    llm = ScriptedLLM()
    said = "Caroline has a dentist appointment tomorrow"
    llm.script(
        "extract_facts",
        ExtractedFacts(
            facts=[ExtractedFact(content=said, scope="user", speaker="caroline", sources=[1, 3])]
        ),
    )
    empty = ExtractedReflections(agent_reflections=[], user_reflections=[], session_reflections=[])
    llm.script("extract_reflections", empty)
    monday_night = _message(0, "I have a dentist appointment tomorrow, so I must leave early.")
    tuesday = SAID + timedelta(hours=19)  # Tuesday 9 May, 08:56
    messages = [
        monday_night,
        _message(1, "Good luck!", role="agent"),
        MessageIn(
            message_id="d1-9",
            role="user",
            content="Booked the taxi for it.",
            created_at=tuesday,
            user_id="caroline",
            name="Caroline",
        ),
    ]
    [fact] = await _form(tmp_path, llm, messages)
    assert fact.content == "Caroline has a dentist appointment on 9 May 2023"
    assert fact.said_at == tuesday  # when it was complete: its latest message
