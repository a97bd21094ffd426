"""Decide facts (seed 001 §6.3): one batched ADD / UPDATE / DELETE / NONE decision per new fact that
has similar stored ones. Existing facts are shown by short indices, never by id.

The answer is events and indices: a text only where a merge is needed (``merged_text``), else the
new fact's own text is stored. Fact texts are shown bare, the candidate lists apart from them, so a
small model has nothing to copy into its answer (issue #12: "(candidate for …)" notes were echoed).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memory.models import FactScope
from memory.prompts.common import (
    ENVELOPE_TOKENS,
    ITEM_TOKENS,
    MAX_ITEMS,
    MAX_TEXT_CHARS,
    ModelOutput,
    PromptInput,
    Rendered,
    tag,
)

SYSTEM = "You manage a fact database: you compare new facts with similar stored ones and decide."

TEMPLATE = """Compare new facts against existing memories and decide what to do with each new fact.

<new_facts>
{new_facts}
</new_facts>

<existing_memories>
{existing}
</existing_memories>

<candidates>
{candidates}
</candidates>

For EVERY new fact return exactly one decision: new_fact_index, the event and, for UPDATE, DELETE and
NONE, existing_index: one existing memory listed as that new fact's candidate.
- ADD: genuinely new information not captured by any existing memory (existing_index null).
- UPDATE: the new fact adds detail to or corrects an existing memory.
- DELETE: the new fact contradicts an existing memory and replaces it (e.g. a preference reversal).
- NONE: the fact is already captured by an existing memory.

merged_text: null, unless an UPDATE must combine details of both texts; then one sentence of at most
{max_words} words. Never copy the lists, their numbers or their tags into it.

New facts are numbered in the order they were said. Several new facts may concern the same existing
memory (a correction of a correction): decide each one; the later statement wins.
When in doubt between UPDATE and ADD, prefer UPDATE to avoid duplicates."""


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
    existing_index: int | None = Field(description="Index in <existing_memories>; null for ADD")
    merged_text: str | None = Field(
        max_length=MAX_TEXT_CHARS,
        description="Only for an UPDATE that combines both texts; else null",
    )


class FactDecisions(ModelOutput):
    """The output schema."""

    decisions: list[FactDecision] = Field(max_length=MAX_ITEMS)


def render(inp: DecideFactsInput) -> Rendered:
    new_lines = "\n".join(f"{f.index}. {tag(f.content)}" for f in inp.new_facts)
    old_lines = "\n".join(f"{e.index}. {tag(e.content)}" for e in inp.existing)
    per_new = {
        f.index: [e.index for e in inp.existing if f.index in e.candidate_for]
        for f in inp.new_facts
    }
    candidates = "\n".join(
        f"new fact {n}: existing {', '.join(map(str, idx))}" for n, idx in per_new.items()
    )
    return Rendered(
        system=SYSTEM,
        user=TEMPLATE.format(
            new_facts=new_lines,
            existing=old_lines,
            candidates=candidates,
            max_words=inp.max_words,
        ),
        max_output_tokens=ENVELOPE_TOKENS + ITEM_TOKENS * len(inp.new_facts),
    )
