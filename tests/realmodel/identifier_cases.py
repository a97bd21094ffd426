"""Identifier-versus-value dedup cases (issue #21): a fact about another thing (another room,
invoice, child, person) next to a new value of the same thing. Shared by the offline tests, the
recorder of the real model's answers (record_decisions.py) and the replay of those answers.

None of the pairs is one of the decide prompt's own examples, so the model is asked to apply the
rule, not to recognise a sentence it was shown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memory.models import AgentConfig
from memory.pipeline.types import CandidatesResult, NewFact, SimilarFact, Window

Event = Literal["ADD", "UPDATE", "DELETE", "NONE"]


@dataclass(frozen=True)
class Case:
    """New facts, the stored facts they are compared with (each new fact's candidates: all of
    them), and the right event for each new fact."""

    name: str
    new: tuple[str, ...]
    stored: tuple[str, ...]
    right: tuple[Event, ...]

    def facts(self) -> list[NewFact]:
        return [NewFact(index=i, content=text, scope="user") for i, text in enumerate(self.new)]

    def candidates(self) -> CandidatesResult:
        similar = [
            SimilarFact(fact_id=f"stored-{j}", content=text, version=1, similarity=0.9)
            for j, text in enumerate(self.stored)
        ]
        return CandidatesResult(by_new_index={i: list(similar) for i in range(len(self.new))})


def one(name: str, new: str, stored: str, right: Event) -> Case:
    return Case(name=name, new=(new,), stored=(stored,), right=(right,))


CASES = (
    one(
        "another room",
        "Room 205 is booked for the workshop on 3 June.",
        "Room 204 is booked for the workshop on 3 June.",
        "ADD",
    ),
    one(
        "a new code for the same locker",
        "The code of Alice's locker 17 is now 5522.",
        "The code of Alice's locker 17 is 4411.",
        "UPDATE",
    ),
    one(
        "another favourite number",
        "Alice's favourite number 31 is 217.",
        "Alice's favourite number 17 is 119.",
        "ADD",
    ),
    one(
        "a new wifi password",
        "The office wifi password is sunflower99.",
        "The office wifi password is tulip42.",
        "UPDATE",
    ),
    one(
        "another child", "Alice's son Max is 9 years old.", "Alice's son Tom is 7 years old.", "ADD"
    ),
    one("a new employer", "Alice works at Globex.", "Alice works at Acme.", "UPDATE"),
    one(
        "another person",
        "Carol's dentist appointment is on 14 July at 10:00.",
        "Dan's dentist appointment is on 14 July at 10:00.",
        "ADD",
    ),
    one(
        "another invoice",
        "Invoice INV-2 is due on 12 March.",
        "Invoice INV-1 is due on 12 March.",
        "ADD",
    ),
    one("a new age", "Alice is 31 years old.", "Alice is 30 years old.", "UPDATE"),
    one(
        "the same fact again",
        "Alice's email is alice@example.com.",
        "Alice's email is alice@example.com.",
        "NONE",
    ),
    # The scenario in one batch: later statements about other numbers, each shown the
    # stored ones it resembles.
    Case(
        name="the issue's favourite numbers, batched",
        new=tuple(f"Alice's favourite number {n} is {7 * n}." for n in (31, 32, 33, 34)),
        stored=tuple(f"Alice's favourite number {n} is {7 * n}." for n in (17, 18, 19)),
        right=("ADD", "ADD", "ADD", "ADD"),
    ),
)

AGENT = AgentConfig(agent_id="eve", name="Eve")


def window() -> Window:
    return Window(
        formation_id="identifiers",
        session_id="s-identifiers",
        agent_id="eve",
        user_id="alice",
        after_seq=0,
        upto_seq=1,
        message_count=1,
        fact_scopes=("user",),
        reflection_scopes=(),
        agent=AGENT,
    )
