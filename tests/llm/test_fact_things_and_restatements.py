"""Whose value a fact gives, and how a fact said again is told.

- A value belongs to a thing: "paid 120 dollars for [the concert tickets]", "moved [the dentist
  appointment] to May 3". Two facts that give values to different things (the concert and the
  museum tickets, the math and the history exam, the dentist appointment and the haircut) both
  hold: the offline rules ADD, and the rule that stands after a model refuses its UPDATE
  (``another_thing``). A new number or date of the same thing is still an UPDATE.
- A lead-in that says a fact is said again ("As I said, …", "Remember that …", "Just to confirm,
  …") names nothing: the extraction leaves it out, and the rules read the rest, so a restatement
  is a duplicate (NONE), and a later change updates the one fact."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.deps import Deps
from memory.llm.base import LLMRequest
from memory.llm.fact_decisions import same_fact
from memory.llm.fact_overlap import another_thing, another_value, may_restate
from memory.llm.heuristic import HeuristicProvider
from memory.llm.heuristic_corrections import as_corrected
from memory.models import AgentConfig, FactFilter, MessageIn
from memory.pipeline import commit, dedup, facts, window
from memory.pipeline.types import FormationRequest
from memory.prompts import ExtractFactsInput, PromptMessage
from memory.prompts.extract_facts import ExtractedFacts
from memory.prompts.same_fact import SameFactInput
from memory.settings import FactSettings, Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import WordHashEmbedder
from tests.llm.test_fact_decisions import NEW_VALUE, SAMPLE_CORRECTIONS
from tests.llm.test_heuristic_distinct_facts import CORRECTIONS, decide

llm = HeuristicProvider()
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)

# (stored, new): one verb, values given to two different things or occasions: both hold.
OTHER_THINGS = [
    (
        "Alice paid 120 dollars for the concert tickets.",
        "Alice paid 80 dollars for the museum tickets.",
    ),
    ("Alice scored 92 on the math exam.", "Alice scored 78 on the history exam."),
    ("Alice got 85 percent on the biology test.", "Alice got 70 percent on the chemistry test."),
    (
        "Alice moved Alice's dentist appointment to May 3.",
        "Alice moved Alice's haircut to May 5.",
    ),
    ("Alice booked a table for 4 at Nopa.", "Alice booked a table for 6 at Zuni."),
    ("Alice moved the couch to the garage.", "Alice moved the bike to the shed."),
    ("Bob sold his car for 9000 euros.", "Bob sold his boat for 12000 euros."),
]
# (stored, new): a new number, date or place of the same thing: still a new value of it.
SAME_THING = [
    ("Alice scored 92 on the math exam.", "Alice scored 95 on the math exam."),
    ("Alice got 85 percent on the biology test.", "Alice got 90 percent on the biology test."),
    ("Alice moved the team meeting to May 3.", "Alice moved the team meeting to May 5."),
    (
        "Alice has a dentist appointment on Monday at 3pm.",
        "Alice has a dentist appointment on Tuesday at 4pm.",
    ),
    ("Alice paid 120 dollars for the tickets.", "Alice paid 150 dollars for the tickets."),
    ("Alice lives in Paris since 2019.", "Alice lives in Berlin since 2023."),
    ("Alice earns 5000 dollars a month.", "Alice earns 6000 dollars a month."),
    ("The meeting is at 3pm on Monday.", "The meeting is at 4pm on Tuesday."),
    ("Project Atlas launches on May 3.", "Project Atlas launches on May 5."),
]
# (stored, new): the stored fact said again, with a lead-in that says so.
RESTATED = [
    ("Alice's locker code is 4471.", "As Alice said, Alice's locker code is 4471."),
    ("Alice's locker code is 4471.", "Remember that Alice's locker code is 4471."),
    ("Alice lives in Lisbon.", "Like Alice said, Alice lives in Lisbon."),
    ("Alice lives in Lisbon.", "As mentioned before, Alice lives in Lisbon."),
    (
        "The wifi password is hunter2.",
        "As the user mentioned earlier, the wifi password is hunter2.",
    ),
    ("Alice's flight is on May 3.", "Just to confirm, Alice's flight is on May 3."),
    ("Alice works at Acme.", "Again, Alice works at Acme."),
]


@pytest.mark.parametrize(("stored", "new"), OTHER_THINGS)
async def test_values_of_two_things_both_hold(stored: str, new: str) -> None:
    assert await decide(stored, new) == "ADD", f"{new!r} must not replace {stored!r}"


@pytest.mark.parametrize(("stored", "new"), SAME_THING)
async def test_a_new_value_of_the_same_thing_still_updates_it(stored: str, new: str) -> None:
    assert await decide(stored, new) == "UPDATE"


@pytest.mark.parametrize(
    ("stored", "new"),
    [
        *OTHER_THINGS[:4],
        # As a model may word them.
        ("The user paid $120 for concert tickets.", "The user paid $80 for museum tickets."),
    ],
)
def test_a_models_update_of_another_things_value_is_refused(stored: str, new: str) -> None:
    assert another_thing(new, stored)


@pytest.mark.parametrize(
    ("stored", "new"),
    SAME_THING + NEW_VALUE + [(o, n) for n, o in SAMPLE_CORRECTIONS] + [c[:2] for c in CORRECTIONS],
)
def test_a_models_update_of_the_same_things_value_stands(stored: str, new: str) -> None:
    assert another_thing(new, stored) is None


@pytest.mark.parametrize(
    ("stored", "new"),
    [
        (
            "The total budget for the Mars Festival was raised to $70,000.",
            "The overall budget is now $65,000.",
        ),
        ("Alice's phone number is 555-1234.", "Alice's mobile number is 555-9999."),
        ("The grant deadline is January 10.", "The submission deadline is January 20."),
    ],
)
def test_a_correction_that_rewords_its_subject_stands(stored: str, new: str) -> None:
    """A correction words its subject otherwise as often as not (review H108): the subject's
    words do not tell two things apart, or the stale value would stay valid beside the new one.
    Two things with one verb whose subjects differ ("the review meeting" / "the budget
    meeting") are left to the model: README "Nothing said is dropped" says what a weak one may
    still replace."""
    assert another_thing(new, stored) is None


@pytest.mark.parametrize(("stored", "new"), OTHER_THINGS + SAME_THING + RESTATED + NEW_VALUE)
async def test_the_offline_rules_never_update_what_the_guard_refuses(stored: str, new: str) -> None:
    """The rule is for a model's word: the rules' own changes pass it."""
    assert await decide(stored, new) == "ADD" or another_thing(new, stored) is None


@pytest.mark.parametrize(("stored", "new"), RESTATED)
async def test_a_fact_said_again_with_a_lead_in_is_a_duplicate(stored: str, new: str) -> None:
    assert await decide(stored, new) == "NONE"
    assert same_fact(SameFactInput(stored=stored, new=new)).same


@pytest.mark.parametrize(("stored", "new"), RESTATED)
def test_a_models_none_of_a_fact_said_again_stands(stored: str, new: str) -> None:
    """The rules that stand after a model read the fact without its lead-in too: "As Alice said"
    is neither a name the stored fact lacks nor the past tense, and the pair may be asked about."""
    assert another_value(new, stored) is None
    assert may_restate(new, stored)


async def test_a_lead_in_does_not_hide_a_new_value() -> None:
    assert await decide(
        "Alice's locker code is 4471.", "As Alice said, Alice's locker code is 4472."
    ) == ("UPDATE")


@pytest.mark.parametrize(
    ("said", "states"),
    [
        ("As I said, my locker code is 4471.", "My locker code is 4471."),
        ("Remember that my locker code is 4471.", "My locker code is 4471."),
        ("Like I said before, I live in Lisbon.", "I live in Lisbon."),
        ("As I mentioned, my flight is on May 3.", "My flight is on May 3."),
        ("Just to confirm, my flight is on May 3.", "My flight is on May 3."),
        ("Remember, I take 20 mg of Lipitor daily.", "I take 20 mg of Lipitor daily."),
        ("Sorry, as I said, my locker code is 4415, not 4412.", "My locker code is 4415."),
        # Not a lead-in: a clause of the fact, or "that" naming a thing.
        ("As a teacher, I grade 30 essays a week.", "As a teacher, I grade 30 essays a week."),
        ("Remember that restaurant on Main Street?", "Remember that restaurant on Main Street?"),
        ("I said my locker code is 4471.", "I said my locker code is 4471."),
    ],
)
def test_the_extraction_reads_what_a_restatement_states(said: str, states: str) -> None:
    assert as_corrected(said) == states


async def test_a_restatement_is_extracted_as_the_fact_itself() -> None:
    said = PromptMessage(
        seq=1,
        role="user",
        name="Alice",
        content="As I said, my locker code is 4471.",
        created_at=T0,
        user_id="alice",
    )
    inp = ExtractFactsInput(
        agent=AgentConfig(agent_id="eve", name="Eve"), messages=[said], max_words=30
    )
    request = LLMRequest(task_input=inp, model="heuristic-rules-v1", system="", prompt="")
    out = (await llm.generate_structured(request, ExtractedFacts)).value
    assert [f.content for f in out.facts] == ["Alice's locker code is 4471."]


# --- through the pipeline's own steps, as a formation stores them ---------------------------


@pytest.fixture
async def deps(tmp_path: Path) -> Deps:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    settings = Settings(facts=FactSettings(dedup_similarity_threshold=0.45))
    return Deps(settings=settings, store=store, llm=llm, embedder=WordHashEmbedder())


async def form(deps: Deps, n: int, text: str) -> None:
    """Record one message of Alice's, the n-th, and form it."""
    said = MessageIn(
        message_id=f"m{n}",
        role="user",
        name="Alice",
        content=text,
        created_at=T0 + timedelta(minutes=n),
        user_id="alice",
    )
    session = f"s{n}"
    await deps.store.record_messages(
        session, "eve", [said], weights={"user": 1.0}, chars_per_token=4.0, now=T0
    )
    req = FormationRequest(session_id=session, agent_id="eve", force=True)
    w = await window.load_window(deps.store, deps.settings, req)
    assert w is not None
    new = (await facts.extract_facts(deps, w)).facts
    candidates = await facts.find_candidates(deps, w, new)
    decided = await dedup.decide(deps, w, new, candidates)
    await commit.commit(deps, w, new, decided.decisions, [], T0 + timedelta(days=1))


async def valid_facts(deps: Deps) -> list[str]:
    found = await deps.store.list_facts(FactFilter(agent_id="eve", user_id="alice"), limit=50)
    return sorted(f.content for f in found)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (
            "I paid 120 dollars for the concert tickets.",
            "I paid 80 dollars for the museum tickets.",
        ),
        ("I moved my dentist appointment to May 3.", "I moved my haircut to May 5."),
    ],
)
async def test_a_later_event_leaves_the_first_valid(deps: Deps, first: str, second: str) -> None:
    await form(deps, 1, first)
    await form(deps, 2, second)
    assert len(await valid_facts(deps)) == 2


async def test_a_restated_fact_is_stored_once_and_its_change_leaves_no_stale_copy(
    deps: Deps,
) -> None:
    await form(deps, 1, "My locker code is 4471.")
    await form(deps, 2, "As I said, my locker code is 4471.")
    assert await valid_facts(deps) == ["Alice's locker code is 4471."]
    await form(deps, 3, "My locker code is 4472.")
    assert await valid_facts(deps) == ["Alice's locker code is 4472."]


def test_a_text_of_repeated_lead_ins_is_read_in_linear_time() -> None:
    """A lead-in's lazy words inside the repeated opener group tried every split of "as said as
    said …": 57 words took 3.5 s, each more pair 1.6 times as long, on every fact compared (an
    imported fact has no word limit). Read atomically, 200 words take microseconds; the guard
    runs in a child process, so that a regression fails the test instead of hanging the suite."""
    code = (
        "from memory.pipeline.dedup import _refusal\n"
        "stored = 'as said ' * 100 + 'the code is 4471.'\n"
        "print(_refusal('UPDATE', \"Alice's locker code is 5582.\", stored))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.stdout.strip() != ""
