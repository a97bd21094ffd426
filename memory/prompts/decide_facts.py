"""Decide facts (seed 001 §6.3): one batched ADD / UPDATE / DELETE / NONE decision per new fact that
has similar stored ones. Existing facts are shown by short indices, never by id.

The answer is events and indices: a text only where a merge is needed (``merged_text``), else the
new fact's own text is stored. Fact texts are shown bare, the candidate lists apart from them, so a
small model has nothing to copy into its answer (issue #12: "(candidate for …)" notes were echoed).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memory.input_rules import ModelText
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

First ask: is the new fact about the SAME thing as that memory? The thing is named before the verb:
a person, an object and its number, code or name. Locker 17 and locker 18, order A-1 and order A-2,
Anna's birthday and Ben's birthday are DIFFERENT things, even when all the other words are the same.
- ADD: a different thing, or a value that holds alongside the stored one (existing_index null).
- UPDATE: a new value of the SAME thing: it corrects the memory or adds detail to it.
- DELETE: the SAME thing is said to be no longer true (e.g. a preference reversal).
- NONE: the SAME thing with the same value: already captured.
Examples (new fact / existing memory):
- "Locker 18's code is 4411" / "Locker 17's code is 4411": ADD, another locker.
- "Locker 17's code is 5522" / "Locker 17's code is 4411": UPDATE, a new code for the same locker.
- "Ben's birthday is 3 May" / "Anna's birthday is 3 May": ADD, another person.
- "Order A-2 ships on 3 May" / "Order A-1 ships on 3 May": ADD, another order.
- "Alice likes sushi" / "Alice likes pizza": ADD, both hold.
- "Alice lives in Berlin" / "Alice lives in Paris": UPDATE, she moved.
- "Tom is an engineer at Acme" / "Tom works at Acme as an engineer": NONE, the same fact in other
  words.

merged_text: null, unless an UPDATE must combine details of both texts; then one sentence of at most
{max_words} words. Never copy the lists, their numbers or their tags into it.

New facts are numbered in the order they were said. Several new facts may concern the same existing
memory (a correction of a correction): decide each one; the later statement wins.
UPDATE replaces the stored fact: when unsure whether two facts are about the same thing, ADD."""


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
    merged_text: ModelText | None = Field(
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
