"""Decide facts (seed 001 §6.3): one batched ADD / UPDATE / DELETE / NONE decision per new fact that
has similar stored ones. Existing facts are shown by short indices, never by id."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memory.models import FactScope
from memory.prompts.common import ModelOutput, PromptInput, Rendered, tag

SYSTEM = "You manage a fact database: you compare new facts with similar stored ones and decide."

TEMPLATE = """Compare new facts against existing memories and decide what to do with each new fact.

<new_facts>
{new_facts}
</new_facts>

<existing_memories>
{existing}
</existing_memories>

For EVERY new fact return exactly one decision, referring to facts by their index numbers:
1. ADD: genuinely new information not captured by any existing memory (existing_index null).
2. UPDATE: the new fact enhances or corrects an existing memory; final_text is the merged text.
3. DELETE: the new fact contradicts an existing memory and invalidates it (e.g. a preference reversal);
   the existing memory is retired and final_text is stored instead.
4. NONE: the fact is already captured by an existing memory (final_text null).

Guidelines:
- Only use an existing_index listed as a candidate for that new fact.
- UPDATE when the new fact adds detail or corrects the existing one (merge intelligently).
- DELETE when there is a direct contradiction; NONE for the same meaning in other words.
- When in doubt between UPDATE and ADD, prefer UPDATE to avoid duplicates.
- final_text at most {max_words} words."""


class NewFactShown(PromptInput):
    index: int
    content: str
    scope: FactScope


class ExistingFactShown(PromptInput):
    index: int = Field(description="Its position in <existing_memories>")
    content: str
    candidate_for: tuple[int, ...] = Field(description="New fact indices it is a candidate for")


class DecideFactsInput(PromptInput):
    task: Literal["decide_facts"] = "decide_facts"
    new_facts: list[NewFactShown]
    existing: list[ExistingFactShown]
    max_words: int


class FactDecision(ModelOutput):
    new_fact_index: int = Field(description="Index of the new fact in <new_facts>")
    event: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    existing_index: int | None = Field(
        description="Index in <existing_memories> for UPDATE/DELETE/NONE"
    )
    final_text: str | None = Field(description="The text to store for ADD/UPDATE/DELETE")
    reasoning: str


class FactDecisions(ModelOutput):
    """The output schema."""

    decisions: list[FactDecision]


def render(inp: DecideFactsInput) -> Rendered:
    new_lines = "\n".join(f"{f.index}. {tag(f.content)}" for f in inp.new_facts)
    old_lines = "\n".join(
        f"{e.index}. {tag(e.content)} (candidate for new facts {', '.join(map(str, e.candidate_for))})"
        for e in inp.existing
    )
    return Rendered(
        system=SYSTEM,
        user=TEMPLATE.format(new_facts=new_lines, existing=old_lines, max_words=inp.max_words),
    )
