"""The offline heuristic provider: deterministic rules over the typed task input, honest usage."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from memory.errors import MalformedOutputError
from memory.llm.base import LLMRequest, Task
from memory.llm.heuristic import HeuristicProvider
from memory.llm.heuristic_person import third_person
from memory.models import AgentConfig, FactScope, Role
from memory.prompts import (
    ConsolidateInput,
    DecideFactsInput,
    ExtractFactsInput,
    ExtractReflectionsInput,
    PromptMessage,
    TaskInput,
)
from memory.prompts.consolidate import ConsolidatedSections, blob_text
from memory.prompts.decide_facts import (
    ExistingFactShown,
    FactDecision,
    FactDecisions,
    NewFactShown,
)
from memory.prompts.extract_facts import ExtractedFacts
from memory.prompts.extract_reflections import (
    CurrentMemory,
    ExtractedReflection,
    ExtractedReflections,
)
from memory.scopes import place_fact, place_reflection
from memory.settings import Scope
from memory.word_count import words

llm = HeuristicProvider()
EVE = AgentConfig(agent_id="eve", name="Eve")


def msg(seq: int, content: str, role: Role = "user", name: str | None = "Alice") -> PromptMessage:
    # The transcript names a speaker by name, user id, agent id or role: "" when none is known.
    return PromptMessage(
        seq=seq,
        role=role,
        name=name or "",
        content=content,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        user_id="alice" if role == "user" else None,
    )


CONVERSATION = [
    msg(1, "Hi there! My email is alice@example.com. I live in Paris."),
    msg(2, "Nice to meet you, Alice. I live in the cloud, 24/7.", role="agent", name="Eve"),
    msg(3, "I work at Acme Corp as a data engineer. Thanks, that was helpful."),
    msg(4, "Can you book a table at Chez Marcel for 8 people? The weather is nice."),
    msg(5, "Our launch deadline is March 3 and your project budget is 50000 dollars."),
]


def request(task_input: TaskInput, prompt: str = "rendered prompt") -> LLMRequest:
    return LLMRequest(
        task_input=task_input, model="heuristic-rules-v1", system="system text", prompt=prompt
    )


def facts_input(messages: list[PromptMessage], max_words: int = 30) -> ExtractFactsInput:
    return ExtractFactsInput(agent=EVE, messages=messages, max_words=max_words)


async def facts(
    messages: list[PromptMessage], scopes: list[FactScope], max_words: int = 30
) -> list[tuple[str, str]]:
    """The facts kept for a window of alice's with these scopes: the heuristic classifies into
    every scope, the pipeline's rule (memory.scopes) keeps what the window allows."""
    inp = facts_input(messages, max_words)
    result = await llm.generate_structured(request(inp), ExtractedFacts)
    kept = [
        (fact.content, place_fact(fact.scope, fact.speaker, "alice", tuple(scopes)))
        for fact in result.value.facts
    ]
    return [(content, scope) for content, scope in kept if scope is not None]


async def test_self_introductions_and_greetings_are_not_facts() -> None:
    msgs = [msg(1, "Hi Eve! I'm Alice, I work at Acme Robotics as the CTO.")]
    assert await facts(msgs, ["user", "agent"]) == [
        ("Alice works at Acme Robotics as the CTO.", "user")
    ]


async def test_a_spoken_correction_states_the_new_value_alone() -> None:
    """The apology and the replaced value are how a correction is said: left in, the fact would
    differ from the one it corrects in more than its value, and both would stay valid."""
    msgs = [
        msg(1, "My locker code is 4412."),
        msg(2, "Sorry, I was wrong: my locker code is 4415, not 4412."),
        msg(3, "Actually, the team meeting moved to Friday at 3pm."),
    ]
    assert await facts(msgs, ["user", "agent"]) == [
        ("Alice's locker code is 4412.", "user"),
        ("Alice's locker code is 4415.", "user"),
        ("The team meeting moved to Friday at 3pm.", "agent"),
    ]


async def test_the_bundled_samples_corrections_state_their_values_alone() -> None:
    """samples/corrections.json, formed offline (docs/local_models.md): "I misread the memo" is an
    apology, and a lead-in telling whom and what about is no part of the fact; left in, they
    made a user fact of the project's budget, beside the agent's (found by H171)."""
    msgs = [
        msg(1, "Sorry, I misread the memo: the total budget is $65,000."),
        msg(2, "Eve, news on the Mars Festival: the total budget was raised to $70,000."),
        msg(3, "Also, the vendor contract deadline moved to January 20, 2027."),
    ]
    assert await facts(msgs, ["user", "agent"]) == [
        ("The total budget is $65,000.", "agent"),
        ("The total budget was raised to $70,000.", "agent"),
        ("The vendor contract deadline moved to January 20, 2027.", "agent"),
    ]


async def test_a_subject_named_news_or_update_is_no_lead_in() -> None:
    """A subject called "News desk" or "Update frequency" is no lead-in (review H177)."""
    msgs = [
        msg(1, "News desk: closes at 6pm on weekdays."),
        msg(2, "Update frequency of the dashboard: every 5 minutes."),
    ]
    assert [text for text, _ in await facts(msgs, ["user", "agent"])] == [
        "News desk: closes at 6pm on weekdays.",
        "Update frequency of the dashboard: every 5 minutes.",
    ]


async def test_a_title_or_e_g_ends_no_sentence_but_a_line_break_does() -> None:
    msgs = [
        msg(1, "My dentist is Dr. Okonkwo on Rua Augusta. My landlord is Mr. Brown."),
        msg(2, "I collect stamps from old empires, e.g. Austria-Hungary.\nI live in St. Louis."),
    ]
    assert await facts(msgs, ["user", "agent"]) == [
        ("Alice's dentist is Dr. Okonkwo on Rua Augusta.", "user"),
        ("Alice's landlord is Mr. Brown.", "user"),
        ("Alice collects stamps from old empires, e.g. Austria-Hungary.", "user"),
        ("Alice lives in St. Louis.", "user"),
    ]


async def test_a_street_or_a_suffix_at_the_end_of_a_sentence_ends_it() -> None:
    msgs = [
        msg(1, "I live on Baker St. My dog is called Rex. My father is John Smith Jr. He is 80.")
    ]
    assert await facts(msgs, ["user", "agent"]) == [
        ("Alice lives on Baker St.", "user"),
        ("Alice's dog is called Rex.", "user"),
        ("Alice's father is John Smith Jr.", "user"),
    ]


async def test_extracts_specific_user_statements_in_the_third_person() -> None:
    assert await facts(CONVERSATION, ["user", "agent"]) == [
        ("Alice's email is alice@example.com.", "user"),
        ("Alice lives in Paris.", "user"),
        ("Alice works at Acme Corp as a data engineer.", "user"),
        # Not in the first person: about the work, so for every conversation of the agent.
        ("Our launch deadline is March 3 and your project budget is 50000 dollars.", "agent"),
    ]
    # Greetings, thanks, small talk, questions and the agent's own words are not facts.


async def test_a_directive_to_the_agent_is_no_fact_for_every_user() -> None:
    """The sentence "Please always answer in Hebrew" names a language, which looks specific, and no "I":
    it was an agent-scope fact, read by every user of the agent (the memory page audit). It is
    how to behave with its speaker: a user reflection."""
    msgs = [
        msg(1, "Please always answer in Hebrew, never in English."),
        msg(2, "Never call me before 10am on Mondays."),
        msg(3, "I prefer the Lisbon office over the Berlin one."),
    ]
    assert await facts(msgs, ["user", "agent"]) == []  # (preferences: user reflections, below)
    work = [
        msg(1, "Acme is the preferred venue supplier for the Mars festival, signed March 3."),
        msg(2, "The client prefers invoices in EUR with a 30 day term from 2026."),
        msg(3, "Always-on backups run at 02:00 on the Berlin cluster since May 2025."),
    ]
    assert [scope for _, scope in await facts(work, ["user", "agent"])] == ["agent"] * 3


async def test_a_statement_joined_to_a_directive_is_a_fact_without_it() -> None:
    """The README's curl walkthrough: the email was lost with the preference it was said with
    (the whole sentence read as a directive), and search_facts never found it."""
    msgs = [
        msg(1, "My email is alice@example.com and I prefer calls after 10am"),
        msg(2, "I prefer calls after 10am and my email is alice@example.com"),  # directive first
    ]
    assert await facts(msgs, ["user", "agent"]) == [("Alice's email is alice@example.com", "user")]


async def test_only_enabled_scopes_with_agent_scope_alone_keeping_agent_and_project_facts() -> None:
    assert await facts(CONVERSATION, ["agent"]) == [
        ("Our launch deadline is March 3 and your project budget is 50000 dollars.", "agent")
    ]
    assert await facts(CONVERSATION, []) == []


async def test_facts_respect_max_words_and_a_missing_name() -> None:
    long = msg(1, "I moved to Lisbon in 2021 " + "and then " * 30 + "stayed.", name=None)
    [(content, _)] = await facts([long], ["user"], max_words=8)
    assert content == "The user moved to Lisbon in 2021 and"
    assert len(content.split()) == 8


def decision_input(pairs: list[tuple[str, str]]) -> DecideFactsInput:
    return DecideFactsInput(
        new_facts=[
            NewFactShown(index=i, content=new, scope="user") for i, (_, new) in enumerate(pairs)
        ],
        existing=[
            ExistingFactShown(index=10 + i, content=old, candidate_for=(i,))
            for i, (old, _) in enumerate(pairs)
        ],
        max_words=30,
    )


async def decide(inp: DecideFactsInput) -> list[FactDecision]:
    result = await llm.generate_structured(request(inp), FactDecisions)
    return result.value.decisions


@pytest.mark.parametrize(
    ("old", "new", "event"),
    [
        ("Alice likes pizza.", "alice likes pizza", "NONE"),
        ("Alice's email is alice@example.com", "Alice's email is alice@example.com.", "NONE"),
        ("Alice is 30 years old", "Alice is 31 years old", "UPDATE"),
        ("The launch deadline is March 3", "The launch deadline is April 3", "UPDATE"),
        ("Alice likes pizza", "Alice dislikes pizza", "DELETE"),
        ("Alice likes pizza", "Alice does not like pizza", "DELETE"),
        ("Alice lives in Paris", "Alice no longer lives in Paris", "DELETE"),
        ("Alice likes pizza", "Alice likes sushi", "ADD"),
        ("Bob is 30 years old", "Alice is 31 years old", "ADD"),
    ],
)
async def test_decision_rules(old: str, new: str, event: str) -> None:
    [decision] = await decide(decision_input([(old, new)]))

    assert decision.new_fact_index == 0
    assert decision.event == event
    assert decision.existing_index == (None if event == "ADD" else 10)
    assert decision.merged_text is None  # the new fact's own text is stored


async def test_a_duplicate_wins_over_an_update_and_facts_without_candidates_are_added() -> None:
    inp = DecideFactsInput(
        new_facts=[
            NewFactShown(index=1, content="Alice is 31", scope="user"),
            NewFactShown(index=0, content="Bob owns a cat", scope="user"),
        ],
        existing=[
            ExistingFactShown(index=0, content="Alice is 30", candidate_for=(1,)),
            ExistingFactShown(index=1, content="Alice is 31", candidate_for=(1,)),
        ],
        max_words=30,
    )
    decisions = await decide(inp)

    assert [(d.new_fact_index, d.event, d.existing_index) for d in decisions] == [
        (0, "ADD", None),
        (1, "NONE", 1),
    ]


def reflection_input(
    scopes: list[Scope], messages: list[PromptMessage] | None = None, **extra: Any
) -> ExtractReflectionsInput:
    fields: dict[str, Any] = {"new_facts": [], "current": {}, "max_words": 35, **extra}
    return ExtractReflectionsInput(
        agent=EVE, messages=messages or PREFERENCES, scopes=tuple(scopes), **fields
    )


PREFERENCES = [
    msg(1, "Please keep answers short. I prefer bullet points over prose."),
    msg(2, "Sure.", role="agent", name="Eve"),
    msg(3, "Call me Al. The weather is nice today. Your project plan is in the shared drive."),
]


async def reflect(inp: ExtractReflectionsInput) -> ExtractedReflections:
    return (await llm.generate_structured(request(inp), ExtractedReflections)).value


async def test_reflections_from_preferences_the_project_and_the_first_request() -> None:
    out = await reflect(reflection_input(["agent", "user", "session"]))

    assert [r.content for r in out.user_reflections] == [
        "Alice said: Please keep answers short.",
        "Alice prefers bullet points over prose.",
        "Alice wants to be called Al.",
    ]
    assert [r.content for r in out.agent_reflections] == [
        "Alice said: Your project plan is in the shared drive."
    ]
    assert [r.content for r in out.session_reflections] == [
        "Alice asked: Please keep answers short. I prefer bullet points over prose."
    ]


def placed(out: ExtractedReflections, scopes: list[Scope]) -> dict[str, list[str]]:
    """Where the pipeline's rule (memory.scopes) puts each reflection in a window of alice's."""
    found: dict[str, list[str]] = {"agent": [], "user": [], "session": []}
    classified: list[tuple[Scope, list[ExtractedReflection]]] = [
        ("agent", out.agent_reflections),
        ("user", out.user_reflections),
        ("session", out.session_reflections),
    ]
    for scope, items in classified:
        for r in items:
            if where := place_reflection(scope, r.speaker, "alice", tuple(scopes)):
                found[where].append(r.content)
    return found


async def test_reflections_go_only_to_enabled_scopes_and_personal_ones_never_to_agent() -> None:
    # No user scope (a group session): preferences stay in the session, never in agent memory.
    no_user = placed(await reflect(reflection_input(["agent", "session"])), ["agent", "session"])
    assert no_user["user"] == []
    assert "Alice prefers bullet points over prose." in no_user["session"]
    assert "Alice prefers bullet points over prose." not in no_user["agent"]

    no_agent = placed(await reflect(reflection_input(["user", "session"])), ["user", "session"])
    assert no_agent["agent"] == []
    assert len(no_agent["user"]) == 3

    session_only = placed(await reflect(reflection_input(["session"])), ["session"])
    assert (session_only["agent"], session_only["user"]) == ([], [])
    assert len(session_only["session"]) == 1 + 3  # the first request, and the preferences


async def test_an_anonymous_speakers_personal_content_is_nobodys_user_memory() -> None:
    guest = msg(1, "My bank is Evilbank and my email is guest@evil.example.", name="Guest")
    guest = guest.model_copy(update={"user_id": None})
    assert await facts([guest], ["user", "agent"]) == []
    out = await reflect(reflection_input(["user", "session"], [guest]))
    assert placed(out, ["user", "session"])["user"] == []


async def test_reflections_already_in_memory_are_not_repeated_and_respect_max_words() -> None:
    current = {
        "user": CurrentMemory(
            consolidated="VERSION: 2\n- Alice prefers bullet points over prose.",
            recent=["Alice wants to be called Al."],
        )
    }
    long_request = msg(1, "Please help me plan the whole festival " + "step by step " * 20)
    out = await reflect(reflection_input(["user", "session"], PREFERENCES, current=current))
    assert [r.content for r in out.user_reflections] == ["Alice said: Please keep answers short."]

    out = await reflect(reflection_input(["session"], [long_request], max_words=10))
    [session] = out.session_reflections
    assert len(session.content.split()) == 10


async def consolidate(scope: Scope, **fields: Any) -> str:
    inp = ConsolidateInput(agent=EVE, scope=scope, **fields)
    answer = (await llm.generate_structured(request(inp), ConsolidatedSections)).value
    return blob_text(answer, inp.next_version)


async def test_consolidation_bumps_the_version_merges_and_deduplicates() -> None:
    text = await consolidate(
        "user",
        current_content="VERSION: 2\n[PREFS]\n- Prefers concise answers\n- Lives in Paris",
        current_version=2,
        reflections=["Likes bullet points", "prefers concise answers."],
        word_limit=300,
    )
    assert text == "VERSION: 3\n- Lives in Paris\n- Likes bullet points\n- prefers concise answers."


async def test_consolidation_drops_the_oldest_lines_to_stay_within_the_word_limit() -> None:
    old = "\n".join(f"- old item number {i}" for i in range(10))  # 5 words each
    text = await consolidate(
        "session",
        current_content=old,
        current_version=0,
        reflections=["newest item"],
        word_limit=20,
    )
    lines = text.splitlines()
    assert lines[0] == "VERSION: 1"
    assert lines[-1] == "- newest item"
    assert lines[1:-1] == [f"- old item number {i}" for i in (7, 8, 9)]
    assert len(text.split()) <= 20


async def test_consolidation_drops_what_was_said_before_the_blob_first() -> None:
    """A reflection said before what the blob holds (a conversation recorded late) is older than
    the blob's items: it goes first when the limit leaves room for only some."""
    text = await consolidate(
        "user",
        current_content="VERSION: 1\n- Alice drinks green tea now",
        current_version=1,
        earlier=["Alice drinks black coffee daily"],
        reflections=["Alice likes jazz"],
        word_limit=12,
    )
    assert text.splitlines() == ["VERSION: 2", "- Alice drinks green tea now", "- Alice likes jazz"]


async def test_consolidation_of_many_reflections_stays_within_the_answers_bounds() -> None:
    """A LoCoMo session's agent reflections (33 in one consolidation) once overflowed the 24
    items a section may hold: the answer was refused and the consolidation took its fallback."""
    reflections = [f"Jon said: insight number {i} about the studio" for i in range(200)]
    blank = {"current_content": "", "current_version": 0, "word_limit": 10_000}
    text = await consolidate("agent", reflections=reflections, **blank)
    lines = text.splitlines()
    assert lines[0] == "VERSION: 1"
    kept = [line.removeprefix("- ") for line in lines[1:]]
    assert len(kept) == 8 * 24  # every item the bounds can hold, the newest
    assert kept == reflections[-len(kept) :]
    text = await consolidate("agent", reflections=reflections[:33], **blank)
    assert len(text.splitlines()) == 1 + 33  # all of them, as one list


async def test_consolidation_keeps_a_blob_a_person_wrote_by_hand() -> None:
    """A person edits the memory in plain lines or other bullets (the memory page, `mnemos
    consolidated edit`, an import): every line is an item; only the headings are not."""
    text = await consolidate(
        "user",
        current_content="VERSION: 1\n## Health\nAlice is allergic to peanuts.\n"
        "* Alice prefers answers in French.\n\n• Alice lives in Oslo",
        current_version=1,
        reflections=["Alice likes short answers"],
        word_limit=300,
    )
    assert text == (
        "VERSION: 2\n- Alice is allergic to peanuts.\n- Alice prefers answers in French.\n"
        "- Alice lives in Oslo\n- Alice likes short answers"
    )


LONG_LINE = (
    "Alice's standing instructions for travel bookings: aisle seat, no red-eye flights, "
    "vegetarian meal, hotels within walking distance of the venue, always refundable fares, "
    "loyalty number on every booking, arrive the evening before any morning meeting, and "
    "send the itinerary to her assistant Bob before paying and copy the travel desk, keep "
    "receipts in the shared folder named after the trip, final check code ZX-4471"
)


async def test_consolidation_keeps_a_line_longer_than_an_item_whole() -> None:
    """Longer than an answer's item may be (400 characters): it was cut there, mid-word, its end
    lost. It is written on as many bullets as it takes, every word kept."""
    assert len(LONG_LINE) > 400
    text = await consolidate(
        "user",
        current_content=f"VERSION: 1\n- {LONG_LINE}",
        current_version=1,
        reflections=["Alice likes short answers"],
        word_limit=300,
    )
    lines = text.splitlines()
    assert lines[-1] == "- Alice likes short answers"
    assert " ".join(line.removeprefix("- ") for line in lines[1:-1]) == LONG_LINE


async def test_consolidation_drops_a_long_old_line_whole_to_fit_the_word_limit() -> None:
    text = await consolidate(
        "session",
        current_content=f"VERSION: 1\n- {LONG_LINE}\n- Alice flies on Monday",
        current_version=1,
        reflections=["Alice needs a hotel in Lisbon"],
        word_limit=40,  # the long line is 69 words
    )
    assert text == "VERSION: 2\n- Alice flies on Monday\n- Alice needs a hotel in Lisbon"


async def test_consolidation_in_chinese_stays_within_the_word_limit() -> None:
    """Each character of a script without spaces is a word (memory.word_count): 100 Chinese
    requests made a "200-word" session blob of 3,930 characters, about 3,300 tokens."""
    request = "她下个月要去东京出差，需要我们帮她预订靠近会场的酒店。"
    reflections = [f"Alice asked: {request}{i}" for i in range(100)]
    inp = {"current_content": "", "current_version": 0, "word_limit": 200}
    text = await consolidate("session", reflections=reflections, **inp)
    assert 180 <= words(text) <= 200
    assert text.endswith(f"- {reflections[-1]}")  # the newest kept, whole


async def test_consolidation_keeps_a_code_corrected_in_another_case() -> None:
    """ "Tr0ub4dor" and "tr0ub4dor" are two passwords: the correction was dropped as a repeat."""
    text = await consolidate(
        "user",
        current_content="VERSION: 1\n- Alice's wifi password is Tr0ub4dor",
        current_version=1,
        reflections=["Alice's wifi password is tr0ub4dor"],
        word_limit=300,
    )
    assert text.splitlines()[-1] == "- Alice's wifi password is tr0ub4dor"


async def test_same_input_same_output_whatever_the_prompt() -> None:
    inp = facts_input(CONVERSATION)
    first = await HeuristicProvider().generate_structured(request(inp, "prompt A"), ExtractedFacts)
    second = await HeuristicProvider().generate_structured(
        request(inp, "another prompt"), ExtractedFacts
    )
    assert first.value == second.value
    assert first.value.facts  # not trivially equal


async def test_usage_is_honest_about_being_rules() -> None:
    req = request(reflection_input(["user"]), prompt="x" * 401)
    result = await llm.generate_structured(req, ExtractedReflections)

    assert result.usage.provider == "heuristic"
    assert result.usage.model == "heuristic-rules-v1"
    assert result.usage.input_tokens == math.ceil((len("system text") + 401) / 4)
    assert result.usage.output_tokens == math.ceil(len(result.value.model_dump_json()) / 4)


@pytest.mark.parametrize(
    ("task", "payload"),
    [
        ("extract_facts", {"text": "I live in Paris"}),
        ("decide_facts", {"new_facts": "Alice is 31", "existing": [], "candidates": []}),
        (
            "extract_reflections",
            {"messages": [{"content": "hi"}], "scopes": ["user"], "max_words": 30},
        ),
    ],
)
async def test_an_unknown_input_shape_is_refused_before_any_provider_sees_it(
    task: Task, payload: dict[str, Any]
) -> None:
    # The typed input replaces the payload dict: a wrong shape cannot even become a request.
    with pytest.raises(ValidationError):
        TypeAdapter(TaskInput).validate_python({"task": task, **payload})


async def test_asking_for_the_wrong_kind_of_output_is_malformed() -> None:
    inp = facts_input(CONVERSATION)
    with pytest.raises(MalformedOutputError):
        await llm.generate_structured(request(inp), FactDecisions)
    consolidate_input = ConsolidateInput(
        agent=EVE,
        scope="agent",
        current_content="",
        current_version=0,
        reflections=[],
        word_limit=50,
    )
    with pytest.raises(MalformedOutputError):
        await llm.generate_structured(request(consolidate_input), ExtractedFacts)


async def test_what_a_person_tells_about_their_life_is_kept_without_a_number_or_name() -> None:
    msgs = [
        msg(1, "I went to a support group for the first time. Wow, that's so cool!"),
        msg(2, "The transgender stories were so inspiring. The weather is nice."),
        msg(3, "I really like concise answers, please keep it short."),
    ]
    assert await facts(msgs, ["user", "agent"]) == [
        ("Alice went to a support group for the first time.", "user"),
        # Not specific and not in the first person: still hers, and it names her.
        ("Alice said: The transgender stories were so inspiring.", "user"),
    ]
    # Reactions, small talk and preferences (reflections, not facts) are left out.


async def test_a_name_with_a_backslash_is_written_as_it_is() -> None:
    """A display name is any text a backend sends: a Windows account ("CORP\\jsmith") raised
    re.PatternError, used as a replacement template, and failed every formation of its session."""
    for name in ("CORP\\jsmith", "Bob\\", "Ann\\1"):
        msgs = [msg(1, "My locker code is 4471 and I'm at the Riverside gym.", name=name)]
        assert await facts(msgs, ["user", "agent"]) == [
            (f"{name}'s locker code is 4471 and {name} is at the Riverside gym.", "user")
        ]


async def test_an_answer_to_the_agents_question_about_its_speaker_is_theirs() -> None:
    """People answer a question about themselves without "I" or "my": "At Initech, as a night
    nurse since 2019." has a number and a name and no first person, the rules' reading of a
    statement about the work, and was every user's agent memory."""
    msgs = [
        msg(1, "The office is at 12 Elm Street since May 2024."),
        msg(2, "Where do you work, and since when?", role="agent", name="Eve"),
        msg(3, "At Initech, as a night nurse since 2019."),
        msg(4, "Grew up in Marseille, moved here in 2015."),
        msg(5, "Thanks. When is the launch of the project?", role="agent", name="Eve"),
        msg(6, "March 3, in the Lisbon office."),
    ]
    assert await facts(msgs, ["user", "agent"]) == [
        ("The office is at 12 Elm Street since May 2024.", "agent"),
        ("Alice said: At Initech, as a night nurse since 2019.", "user"),
        ("Alice said: Grew up in Marseille, moved here in 2015.", "user"),
        # The agent asked about the work, not about her: every user's, as before.
        ("March 3, in the Lisbon office.", "agent"),
    ]


NINE_DIRECTIVES = [
    "Please always answer in French.",
    "Please never use emoji.",
    "Please always cite sources.",
    "Please always keep answers short.",
    "Please never schedule calls before 10am.",
    "Please always use metric units.",
    "Please never mention my ex.",
    "Please always sign off with my initials.",
    "Please always use the 24 hour clock.",
]


async def test_nine_directives_in_one_message_are_answered_within_the_schema() -> None:
    """Nine standing instructions pasted at once were nine user reflections, over the schema's
    eight: the answer was refused, the same again on every retry, and the message passed over for
    reflections, none of them kept. A split cannot help one message, and cutting it to eight lost
    the ninth unseen: the ninth is said in the eighth item."""
    one = [msg(1, " ".join(NINE_DIRECTIVES))]
    out = await reflect(reflection_input(["user", "session"], one))
    assert [r.content for r in out.user_reflections] == [
        "Alice said: Please always answer in French.",
        "Alice said: Please never use emoji.",
        "Alice said: Please always cite sources.",
        "Alice said: Please always keep answers short.",
        "Alice said: Please never schedule calls before 10am.",
        "Alice said: Please always use metric units.",
        "Please never mention Alice's ex.",
        "Please always sign off with Alice's initials."
        " Alice said: Please always use the 24 hour clock.",
    ]
    assert [r.speaker for r in out.user_reflections] == ["alice"] * 8
    assert [r.sources for r in out.user_reflections] == [[1]] * 8
    assert len(out.session_reflections) == 1


async def test_nine_directives_too_long_to_join_are_refused_not_cut() -> None:
    """When the ones past the bound do not fit in one item, none is dropped unseen: the answer is
    refused and the message is passed over visibly (a degraded formation), as before."""
    one = [msg(1, " ".join(NINE_DIRECTIVES))]
    with pytest.raises(MalformedOutputError):
        await reflect(reflection_input(["user", "session"], one, max_words=10))


async def test_an_answer_to_a_request_is_the_works() -> None:
    """ "Can you tell me when the launch is?" asks about the work, not about the user: her answer,
    and what she says next, were her user memory, and an agent with only agent memory kept
    nothing of them."""
    msgs = [
        msg(1, "Hi, we are preparing the launch."),
        msg(
            2, "Sure! Can you tell me when the launch of the project is?", role="agent", name="Eve"
        ),
        msg(3, "March 3, in the Lisbon office."),
        msg(4, "The staging server is at 10.0.0.12 since May 2024."),
        msg(5, "Do you want me to book the Lisbon office? Are you sure?", role="agent", name="Eve"),
        msg(6, "Room 4 at the Lisbon office, from 9am to 5pm."),
    ]
    expected = [
        ("March 3, in the Lisbon office.", "agent"),
        ("The staging server is at 10.0.0.12 since May 2024.", "agent"),
        ("Room 4 at the Lisbon office, from 9am to 5pm.", "agent"),
    ]
    assert await facts(msgs, ["user", "agent"]) == expected
    assert await facts(msgs, ["agent"]) == expected


async def test_the_answers_to_a_question_about_its_speaker_are_theirs() -> None:
    """Every person's message up to the agent's next one is an answer ("Born in 1985 in Lyon.",
    "90000 dollars a year."), and what is said there about the work is the speaker's too (the
    safe side); after the agent speaks again, the work's is the agent's."""
    msgs = [
        msg(1, "When were you born?", role="agent", name="Eve"),
        msg(2, "Born in 1985 in Lyon."),
        msg(3, "The staging server is at 10.0.0.12 since May 2024."),
        msg(4, "Noted. What's your salary?", role="agent", name="Eve"),
        msg(5, "90000 dollars a year, paid in Lisbon."),
        msg(6, "Thanks. The launch of Project Atlas is on March 3.", role="agent", name="Eve"),
        msg(7, "The launch review of Project Atlas is on March 1."),
    ]
    assert await facts(msgs, ["user", "agent"]) == [
        ("Alice said: Born in 1985 in Lyon.", "user"),
        ("Alice said: The staging server is at 10.0.0.12 since May 2024.", "user"),
        ("Alice said: 90000 dollars a year, paid in Lisbon.", "user"),
        ("The launch review of Project Atlas is on March 1.", "agent"),
    ]


async def test_the_one_asked_may_answer_second_in_a_group() -> None:
    """ "Bob, where do you work?": Alice speaks first, Bob answers (review H113). Bob's answer is
    his, never the agent's, which every user reads."""
    bob = PromptMessage(
        seq=3, role="user", name="Bob", content="At Initech, as a night nurse since 2019.",
        created_at=datetime(2026, 1, 1, tzinfo=UTC), user_id="bob",
    )  # fmt: skip
    msgs = [
        msg(1, "Bob, where do you work?", role="agent", name="Eve"),
        msg(2, "Ha, Bob works too much at the Riverside plant."),
        bob,
    ]
    result = await llm.generate_structured(request(facts_input(msgs)), ExtractedFacts)
    scopes = {f.content: f.scope for f in result.value.facts}
    assert scopes["Bob said: At Initech, as a night nurse since 2019."] == "user"


async def test_a_present_verb_ending_in_ed_takes_its_s() -> None:
    """ "I need" was written "Alice need": a verb ending in -ed read as a regular past form."""
    msgs = [msg(1, "I need a quiet room at the Riverside office, and I agreed to pay 40 dollars.")]
    assert await facts(msgs, ["user", "agent"]) == [
        (
            "Alice needs a quiet room at the Riverside office, and Alice agreed to pay 40 dollars.",
            "user",
        )
    ]


@pytest.mark.parametrize(
    ("said", "written"),
    [
        ("I fly to Kathmandu tomorrow.", "Alice flies to Kathmandu tomorrow."),
        ("I apply for jobs in Berlin.", "Alice applies for jobs in Berlin."),
        ("I rely on my bike.", "Alice relies on Alice's bike."),
        ("I only fly economy.", "Alice only flies economy."),
        ("I usually cycle to work.", "Alice usually cycles to work."),  # an adverb still is one
    ],
)
def test_a_verb_ending_in_ly_is_not_read_as_an_adverb(said: str, written: str) -> None:
    """It was: "I fly to Kathmandu" stored as "Alice fly toes Kathmandu" (the offline provider is
    the default without a key)."""
    assert third_person(said, "Alice") == written


@pytest.mark.parametrize(
    ("said", "written"),
    [
        ("I now live in Berlin.", "Alice now lives in Berlin."),
        ("I now work at Apple.", "Alice now works at Apple."),
        ("I sometimes cook pasta.", "Alice sometimes cooks pasta."),
        ("I already own a Tesla.", "Alice already owns a Tesla."),
        ("I once lived in Rome.", "Alice once lived in Rome."),
        ("I too work at Acme.", "Alice too works at Acme."),
        ("I then moved to Lyon.", "Alice then moved to Lyon."),
        ("I even speak Basque.", "Alice even speaks Basque."),
    ],
)
def test_an_adverb_before_the_verb_is_not_conjugated(said: str, written: str) -> None:
    """It was: "I now work at Apple" stored as "Alice nows work at Apple", a fact whose verb the
    dedup rules cannot read, added beside "Alice works at Google" instead of replacing it."""
    assert third_person(said, "Alice") == written
