"""Same fact? (issue #22: a restatement is NONE): one yes/no question about one pair, asked only
after the batched decision added or updated a fact that the rules see may state a stored one
again (memory/pipeline/restatements.py). A small model that never answers NONE in the batched
decision tells a restatement from a change when asked only that.
"""

from __future__ import annotations

from typing import Literal

from memory.prompts.common import ModelOutput, PromptInput, Rendered, tag

SYSTEM = "You compare two facts kept in a memory."

TEMPLATE = """Do these two sentences state the same fact, so that storing the second adds nothing new?

A: {stored}
B: {new}

Answer "same": true only if B says nothing that A does not already say (the same person or thing,
the same value, nothing added, changed or negated). Otherwise "same": false."""


class SameFactInput(PromptInput):
    task: Literal["same_fact"] = "same_fact"
    stored: str
    new: str


class SameFact(ModelOutput):
    """The output schema."""

    same: bool


def render(inp: SameFactInput) -> Rendered:
    return Rendered(
        system=SYSTEM,
        user=TEMPLATE.format(stored=tag(inp.stored), new=tag(inp.new)),
        max_output_tokens=24,
    )
