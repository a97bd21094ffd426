"""Issue #21, "identifiers are not values", on the LLM path: a real small model's answers to the
decide prompt (data/decide-identifiers.jsonl, see data/README.md), served back byte for byte
through the fake OpenAI-compatible server into the pipeline's own decision step.

Each case asserts what the pipeline does with the recorded answer, right or wrong: where the model
decided a pair wrong, the test says so (WRONG below) instead of pretending it did not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory.errors import MnemosError
from tests.realmodel.identifier_cases import CASES, Case
from tests.realmodel.replay import decide_replayed

DATA = Path(__file__).parent / "data" / "decide-identifiers.jsonl"
RECORDED: dict[str, dict[str, Any]] = {
    line["case"]: line for line in map(json.loads, DATA.read_text().splitlines()) if line
}
BY_NAME = {case.name: case for case in CASES}

# What the recorded model decided, where that is not the right event (see data/README.md).
# A 1.5B model reads most pairs of similar words as one fact changed, whatever the prompt says.
# Where a number or code before the verb tells the two apart (another room, another favourite
# number, another invoice), the rule decides ADD and the model is no longer asked (predecide.py):
# its wrong answers for those pairs ("another room": UPDATE, "another favourite number": UPDATE)
# no longer reach the store.
WRONG: dict[str, tuple[str, ...]] = {
    "another child": ("UPDATE",),
    "the same fact again": ("ADD",),  # the store's exact-text rule still keeps one copy
}
# Wrong answers a rule written since the recording refuses: the pipeline decided the model's
# event then, and the right one now. "another person": the model UPDATEd Carol's dentist
# appointment with Dan's; an UPDATE of one named person's fact by another's is refused
# (memory/llm/fact_overlap.py ``another_owner``) and Dan's is added beside Carol's.
REFUSED_SINCE = {"another person"}


def _blocks(prompt: str) -> list[str]:
    """The data the prompt shows (new facts, stored ones, candidate lists), not its wording."""
    tags = ("new_facts", "existing_memories", "candidates")
    return [prompt.split(f"<{t}>")[1].split(f"</{t}>")[0] for t in tags]


def test_the_recordings_cover_both_kinds_of_pair() -> None:
    assert set(RECORDED) <= set(BY_NAME)
    rights = {event for name in RECORDED for event in BY_NAME[name].right}
    assert {"ADD", "UPDATE"} <= rights  # another thing, and a new value of the same thing


@pytest.mark.parametrize("name", list(RECORDED))
async def test_a_recorded_decision_through_the_pipeline(name: str, tmp_path: Path) -> None:
    case: Case = BY_NAME[name]
    line = RECORDED[name]
    decided, requests = await decide_replayed(line, case.facts(), case.candidates(), tmp_path)
    # An answer the pipeline rejects: the step is retried.
    outcome = (
        f"rejected: {decided}"
        if isinstance(decided, MnemosError)
        else [d.event for d in decided.decisions]
    )
    if not requests:
        # Decided by rule (memory/pipeline/predecide.py), the model not asked: the same words
        # again are NONE, another numbered thing is ADD; its recorded answer never reaches the
        # store, and the rule's decision is the right one.
        assert outcome == list(case.right)
        return
    [request] = requests

    # The model was shown exactly these facts when it answered.
    recorded_prompt = line["messages"][1]["content"]
    assert _blocks(request.body["messages"][1]["content"]) == _blocks(recorded_prompt)
    if name in REFUSED_SINCE:
        assert outcome != line["decided"] and outcome == list(case.right)
        return
    assert outcome == line["decided"]  # as the pipeline decided when it was recorded
    assert outcome == list(WRONG.get(name, case.right))
