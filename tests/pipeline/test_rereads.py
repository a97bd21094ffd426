"""A message the model passed over is read again alone (memory/pipeline/rereads.py).

The window's answer below is the one Qwen2.5-Coder-1.5B gave for samples/corrections.json: it
never stated the correction "$65,000", and cited the deadline from the correction's number."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory.deps import Deps
from memory.errors import MalformedOutputError
from memory.model_check import CheckReport, form_session
from memory.models import AgentConfig, Fact, FactFilter, MessageIn, StoredMessage
from memory.pipeline import facts as pipeline_facts
from memory.pipeline import rereads, window
from memory.pipeline.types import FormationRequest, NewFact
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts
from memory.prompts.extract_reflections import ExtractedReflections
from memory.settings import FactSettings, Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import Reply, ScriptedLLM, WordHashEmbedder, transient

AT = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
SAID = [
    ("user", "Eve, news on the Mars Festival: the total budget was raised to $70,000."),
    ("agent", "Great news. With $70,000 we can add a second stage."),
    ("user", "Sorry, I misread the memo: the total budget is $65,000."),
    ("user", "Also, the vendor contract deadline moved to January 20, 2027."),
    ("user", "Thanks, Eve! I'm off to Lisbon."),
]
WINDOW_ANSWER = ExtractedFacts(
    facts=[
        ExtractedFact(
            content="The total budget for the Mars Festival was raised to $70,000.",
            scope="agent",
            sources=[1],
        ),
        ExtractedFact(
            content="The vendor contract deadline moved to January 20, 2027.",
            scope="agent",
            sources=[3],  # the correction's number, one off
        ),
    ]
)
CORRECTION = ExtractedFacts(
    facts=[ExtractedFact(content="The total budget is $65,000.", scope="agent", sources=[1])]
)
LISBON = ExtractedFacts(
    facts=[ExtractedFact(content="Alice is going to Lisbon.", scope="user", speaker="alice")]
)
NO_REFLECTIONS = ExtractedReflections(
    agent_reflections=[], user_reflections=[], session_reflections=[]
)


def _messages() -> list[MessageIn]:
    return [
        MessageIn(
            message_id=f"c{n}",
            role="user" if role == "user" else "agent",
            content=text,
            created_at=AT + timedelta(minutes=n),
            user_id="alice" if role == "user" else None,
            name="Alice" if role == "user" else "Eve",
        )
        for n, (role, text) in enumerate(SAID, 1)
    ]


async def _form(tmp_path: Path, llm: ScriptedLLM, reread: int = 3) -> list[Fact]:
    store = SQLiteStore(tmp_path / "m.db")
    await store.setup()
    settings = Settings(facts=FactSettings(reread_messages=reread))
    deps = Deps(settings=settings, store=store, llm=llm, embedder=WordHashEmbedder())
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    await store.record_messages(
        "s1", "eve", _messages(), weights={"user": 1.0}, chars_per_token=4.0, now=AT
    )
    report = CheckReport()
    await form_session(deps, "eve", "s1", report)
    assert report.degraded == []
    try:
        flt = FactFilter(agent_id="eve", user_id="alice")
        return await store.recent_facts(flt, since=datetime(2000, 1, 1, tzinfo=UTC), limit=50)
    finally:
        await store.close()


def _scripted(*second_looks: Reply) -> ScriptedLLM:
    llm = ScriptedLLM({"extract_reflections": NO_REFLECTIONS})
    llm.script("extract_facts", WINDOW_ANSWER, *second_looks)
    return llm


async def test_the_correction_the_window_answer_passed_over_is_read_alone_and_kept(
    tmp_path: Path,
) -> None:
    llm = _scripted(CORRECTION, LISBON)
    facts = {f.content: f for f in await _form(tmp_path, llm)}
    assert facts["The total budget is $65,000."].source_message_ids == ("c3",)
    assert facts["Alice is going to Lisbon."].source_message_ids == ("c5",)
    asked = llm.calls("extract_facts")
    # The window, then each message the answer passed over, alone: the correction (no fact
    # writes "$65,000", and the fact citing it shares no word with it) and the last one
    # ("Lisbon"; "Eve" is a speaker's name, no news). The agent's message is not a person's.
    assert len(asked) == 3
    assert "$65,000" in asked[1].prompt and "$70,000" not in asked[1].prompt
    assert "Lisbon" in asked[2].prompt and "$65,000" not in asked[2].prompt


async def test_the_second_look_is_bounded_and_can_be_turned_off(tmp_path: Path) -> None:
    llm = _scripted(CORRECTION)
    contents = {f.content for f in await _form(tmp_path / "one", llm, reread=1)}
    assert "The total budget is $65,000." in contents
    assert len(llm.calls("extract_facts")) == 2

    off = _scripted()
    contents = {f.content for f in await _form(tmp_path / "off", off, reread=0)}
    assert "The total budget is $65,000." not in contents
    assert len(off.calls("extract_facts")) == 1


async def test_an_unusable_second_look_leaves_the_windows_answer_standing(
    tmp_path: Path,
) -> None:
    llm = _scripted(MalformedOutputError("looped"), MalformedOutputError("looped"))
    contents = {f.content for f in await _form(tmp_path, llm)}
    assert contents == {f.content for f in WINDOW_ANSWER.facts}


async def test_a_provider_failing_on_a_second_look_ends_them_and_the_window_stands(
    tmp_path: Path,
) -> None:
    llm = _scripted(transient("rate limited"))
    contents = {f.content for f in await _form(tmp_path, llm)}
    assert contents == {f.content for f in WINDOW_ANSWER.facts}
    assert len(llm.calls("extract_facts")) == 2  # the window once, one look, no more


async def test_rules_that_read_every_message_alone_are_not_asked_again(tmp_path: Path) -> None:
    class Rules(ScriptedLLM):
        deterministic = True

    llm = Rules({"extract_reflections": NO_REFLECTIONS})
    llm.script("extract_facts", WINDOW_ANSWER)
    await _form(tmp_path, llm)
    assert len(llm.calls("extract_facts")) == 1


def _stored(seq: int, text: str, role: str = "user") -> StoredMessage:
    return StoredMessage(
        session_id="s1",
        seq=seq,
        message_id=f"m{seq}",
        role="user" if role == "user" else "agent",
        content=text,
        created_at=AT + timedelta(minutes=seq),
        user_id="alice" if role == "user" else None,
        name="Alice" if role == "user" else "Eve",
    )


def _fact(index: int, text: str, *sources: str) -> NewFact:
    return NewFact(index=index, content=text, scope="agent", source_message_ids=sources)


def test_what_counts_as_passed_over() -> None:
    messages = [
        _stored(1, "The budget is $70,000."),
        _stored(2, "It is $70,000 now, Alice.", role="agent"),
        _stored(3, "Sorry: the budget is $65,000."),
        _stored(4, "Thanks, Eve!"),
        _stored(5, "The venue is in Lisbon."),
        _stored(6, "Carla Reyes joins us."),
    ]
    kept = [
        _fact(0, "The budget is $70,000.", "m1"),
        _fact(1, "Carla Reyes joins the team.", "m6"),
        _fact(2, "The venue is the Hub.", "m3"),  # cited one off, no word of m3
    ]
    assert [m.message_id for m in rereads.passed_over(messages, kept, 5)] == ["m3", "m5"]
    assert [m.message_id for m in rereads.passed_over(messages, kept, 1)] == ["m3"]
    assert rereads.passed_over(messages[:1], [], 5) == []  # a window of one was read alone


def test_a_second_looks_facts_stand_where_their_message_was_said() -> None:
    messages = [_stored(n, f"message {n}") for n in (1, 2, 3, 4)]
    first = [_fact(0, "A", "m1"), _fact(1, "D", "m4"), _fact(2, "B again", "m2")]
    again = [
        (messages[2], [_fact(0, "C", "m3"), _fact(1, "A", "m3")]),  # "A" is kept already
        (messages[0], [_fact(0, "A2", "m1")]),
    ]
    out = rereads.merged(first, again, messages, limit=10)
    assert [(f.index, f.content) for f in out] == [
        (0, "A"),
        (1, "A2"),
        (2, "D"),
        (3, "B again"),
        (4, "C"),
    ]
    # The cap leaves out a second look's facts, never the first answer's (those are at most
    # the cap: facts._kept): room for one, the first second look's.
    capped = rereads.merged(first, again, messages, limit=4)
    assert [f.content for f in capped] == ["A", "D", "B again", "C"]


async def test_what_the_second_looks_find_past_the_windows_bound_is_counted(
    tmp_path: Path,
) -> None:
    """Kept to the window's bound (facts.max_per_formation), the second looks' facts past it
    are said and never formed: the result counts them, for the run's summary and metric
    (workflows/form_steps.py), where they were only mixed into a log line's ``dropped``."""
    store = SQLiteStore(tmp_path / "m.db")
    await store.setup()
    settings = Settings(facts=FactSettings(reread_messages=3, max_per_formation=3))
    deps = Deps(
        settings=settings,
        store=store,
        llm=_scripted(CORRECTION, LISBON),
        embedder=WordHashEmbedder(),
    )
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    await store.record_messages(
        "s1", "eve", _messages(), weights={"user": 1.0}, chars_per_token=4.0, now=AT
    )
    req = FormationRequest(session_id="s1", agent_id="eve", force=True)
    try:
        w = await window.load_window(store, settings, req)
        assert w is not None
        result = await pipeline_facts.extract_facts(deps, w)
    finally:
        await store.close()
    # The window's two facts and the correction's; Lisbon's is past the bound of 3.
    kept = {f.content for f in result.facts}
    assert "The total budget is $65,000." in kept and len(kept) == 3
    assert "Alice is going to Lisbon." not in kept
    assert result.over_bound == 1
