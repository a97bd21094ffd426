"""A real small model's dedup answers on LoCoMo (data/decide-locomo.jsonl, see data/README.md),
served back byte for byte through the fake OpenAI-compatible server into the pipeline's own
decision step, with the facts and candidates the model was shown.

On these the model answers UPDATE for most facts about the same person, whatever the fact says:
"Gina appreciates Jon's help" would have replaced "Gina found a place with great natural light".
The pipeline refuses a change of a fact that says nothing in common with the new one (the new fact
is added beside it); what a word in common still lets through is listed as WRONG, not hidden."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from memory.errors import InvalidModelOutputError, MnemosError
from memory.pipeline.predecide import refused
from tests.realmodel.replay import block, decide_replayed, shown, task_of

DATA = Path(__file__).parent / "data" / "decide-locomo.jsonl"
RECORDED = [json.loads(line) for line in DATA.read_text().splitlines() if line]


# What the pipeline makes of each recorded answer: (verdict, event, new fact, stored fact) for
# each of the model's UPDATE, DELETE or NONE, "kept" when stored as the model said, "refused" when
# the rule added the new fact instead (it shares nothing with the stored fact, names neither its
# attribute nor its verb, or names no candidate of that new fact); "rejected" when the answer
# fails its checks (a decision for a fact not asked about: the step is retried). A change naming
# no fact (stored index None) is refused, and the new fact, kept as an ADD, gets a second look
# this recording never answered: it fails, and the first decisions stand. Read by hand against
# the facts: every change the model made is wrong; the rules keep two of them.
EXPECTED: dict[int, list[tuple[str, str, int, int | None]] | str] = {
    1: [("refused", "UPDATE", 1, None), ("refused", "UPDATE", 3, None)],
    2: [("refused", "UPDATE", 1, 2)],
    3: "rejected",
    4: [("refused", "UPDATE", 1, 5), ("kept", "UPDATE", 3, 0)],
    5: [("refused", "UPDATE", 1, 0), ("refused", "UPDATE", 4, 1)],
    6: [("kept", "UPDATE", 1, 2), ("refused", "UPDATE", 3, 4)],
    7: [("refused", "UPDATE", 1, 0), ("refused", "UPDATE", 3, 4)],
    8: [("refused", "UPDATE", 1, None), ("refused", "UPDATE", 2, None)],
}
# Kept, and wrong: "a dance comp" and "the ideal spot for his dance studio" are both Jon's plans
# around dancing, and "is" names no attribute the rules could check; "the ideal spot for his dance
# studio" and "plans to start a dance studio" share the studio, and the model's merged text was
# another new fact's ("Jon is looking for the right type of flooring for his dance studio.").
WRONG = {
    (4, 3, 0): ("Jon is getting ready for a dance comp", "Jon is on the hunt for the ideal spot"),
    (6, 1, 2): ("Jon is on the hunt for the ideal spot", "Jon plans to start a dance studio"),
}

# The same eight prompts asked again at their first attempt with the decision schema narrowed to
# each request (memory/llm/decision_schema.py; data/decide-locomo-narrowed.jsonl). Every answer is
# accepted, none retried; of its 22 changes the rules refuse 19, three of them a merge that was
# another stored fact's text ("Jon plans to perform at a nearby festival in February 2023."
# for "Jon is looking for the right type of flooring for his dance studio", prompts 3, 6 and 7).
NARROWED = Path(__file__).parent / "data" / "decide-locomo-narrowed.jsonl"
RECORDED_NARROWED = [json.loads(line) for line in NARROWED.read_text().splitlines() if line]
EXPECTED_NARROWED: dict[int, list[tuple[str, str, int, int]] | str] = {
    1: [("refused", "UPDATE", 1, 1), ("refused", "UPDATE", 2, 2), ("refused", "UPDATE", 3, 2)],
    2: [("refused", "UPDATE", 0, 0), ("refused", "UPDATE", 1, 1)],
    3: [("refused", "UPDATE", 1, 0), ("refused", "UPDATE", 3, 2)],
    4: [
        ("refused", "UPDATE", 0, 3),
        ("refused", "UPDATE", 1, 5),
        ("kept", "UPDATE", 2, 0),
        ("kept", "UPDATE", 3, 0),
    ],
    5: [
        ("refused", "UPDATE", 1, 0),
        ("refused", "UPDATE", 2, 1),
        ("refused", "UPDATE", 4, 1),
        ("kept", "UPDATE", 5, 3),
    ],
    6: [("refused", "UPDATE", 1, 0), ("refused", "UPDATE", 3, 2)],
    7: [("refused", "UPDATE", 1, 0), ("refused", "UPDATE", 3, 2)],
    8: [("refused", "UPDATE", 1, 1), ("refused", "UPDATE", 2, 2), ("refused", "UPDATE", 3, 2)],
}
# Kept: two wrong (Jon's joy in dancing and his dance comp are no new value of his hunt for a
# studio spot), and one a detail of the same liking (its merged text drops "for her dance studios").
KEPT_NARROWED = {
    (4, 2, 0): ("wrong", "Jon is passionate about dancing", "Jon is on the hunt for the ideal"),
    (4, 3, 0): ("wrong", "Jon is getting ready for a dance comp", "Jon is on the hunt for the"),
    (5, 5, 3): ("right", "Gina likes Marley flooring because", "Gina likes Marley flooring for"),
}


async def _decide(
    line: dict[str, Any], tmp_path: Path
) -> list[tuple[str, str, int, int | None]] | str:
    new, candidates = shown(line["messages"][1]["content"])
    decided, requests = await decide_replayed(line, new, candidates, tmp_path)
    if isinstance(decided, InvalidModelOutputError):
        return "rejected"
    assert not isinstance(decided, MnemosError), decided
    request, *second_looks = requests
    # A second look this recording never answered fails at the fake server, which ends the
    # second looks with the first decision kept (restatements.second_look): asked once.
    answered = len(line.get("then", []))
    assert [task_of(r) for r in second_looks] == ["same_fact"] * (answered or len(second_looks))
    assert len(second_looks) <= max(answered, 1)
    prompt = request.body["messages"][1]["content"]
    for tag in ("new_facts", "existing_memories", "candidates"):  # shown what it was shown
        assert block(prompt, tag) == block(line["messages"][1]["content"], tag)
    answer = {d["new_fact_index"]: d for d in json.loads(line["content"])["decisions"]}
    said = {f.index: f.content for f in new}
    for d in filter(refused, decided.decisions):  # added as said, nothing else touched
        assert (d.event, d.final_text, d.existing_id) == ("ADD", said[d.new_index], None)
    return [
        (
            "refused" if refused(d) else "kept",
            answer[d.new_index]["event"],
            d.new_index,
            answer[d.new_index]["existing_index"],
        )
        for d in decided.decisions
        if answer[d.new_index]["event"] != "ADD"
    ]


def _stored(prompt: str, stored_index: int) -> str:
    _, candidates = shown(prompt)
    return next(
        c.content
        for cands in candidates.by_new_index.values()
        for c in cands
        if c.fact_id == f"stored-{stored_index}"
    )


@pytest.mark.parametrize("line", RECORDED, ids=[f"answer-{line['n']}" for line in RECORDED])
async def test_a_recorded_locomo_answer_through_the_pipeline(
    line: dict[str, Any], tmp_path: Path
) -> None:
    outcome = await _decide(line, tmp_path)
    assert outcome == EXPECTED[line["n"]]
    if isinstance(outcome, str):
        return
    prompt = line["messages"][1]["content"]
    said = {f.index: f.content for f in shown(prompt)[0]}
    for verdict, _, new_index, stored_index in outcome:
        if verdict == "kept":
            assert stored_index is not None  # a change kept names the fact it changes
            wrong = WRONG[(line["n"], new_index, stored_index)]
            assert said[new_index].startswith(wrong[0])
            assert _stored(prompt, stored_index).startswith(wrong[1])


@pytest.mark.parametrize(
    "line", RECORDED_NARROWED, ids=[f"answer-{line['n']}" for line in RECORDED_NARROWED]
)
async def test_a_locomo_answer_under_the_narrowed_schema(
    line: dict[str, Any], tmp_path: Path
) -> None:
    schema = line["response_format"]["json_schema"]["schema"]
    assert "prefixItems" in schema["properties"]["decisions"]  # asked as the provider asks now
    assert Draft202012Validator(schema).is_valid(json.loads(line["content"]))  # the grammar held
    outcome = await _decide(line, tmp_path)
    assert outcome == EXPECTED_NARROWED[line["n"]]
    assert not isinstance(outcome, str)  # accepted: none rejected, none retried
    prompt = line["messages"][1]["content"]
    said = {f.index: f.content for f in shown(prompt)[0]}
    for verdict, _, new_index, stored_index in outcome:
        if verdict == "kept":
            assert stored_index is not None
            _, new_start, stored_start = KEPT_NARROWED[(line["n"], new_index, stored_index)]
            assert said[new_index].startswith(new_start)
            assert _stored(prompt, stored_index).startswith(stored_start)
