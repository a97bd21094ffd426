"""The prompts, one module per LLM task (seed 001 §4.4, §6.3, §7.2 with the criteria of 002).

Each module holds the task's typed input, its ``render`` (system + user text) and its output schema.
Rendering only: no I/O. Real providers send the rendered text; the offline heuristic provider reads
the same typed input, so it never parses prose.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from memory.prompts import (
    consolidate,
    decide_facts,
    extract_facts,
    extract_reflections,
    same_fact,
)
from memory.prompts.common import PromptMessage, Rendered, tag
from memory.prompts.consolidate import ConsolidateInput
from memory.prompts.decide_facts import DecideFactsInput
from memory.prompts.extract_facts import ExtractFactsInput
from memory.prompts.extract_reflections import ExtractReflectionsInput
from memory.prompts.same_fact import SameFactInput

TaskInput = Annotated[
    ExtractFactsInput
    | DecideFactsInput
    | ExtractReflectionsInput
    | ConsolidateInput
    | SameFactInput,
    Field(discriminator="task"),
]


def render(inp: TaskInput) -> Rendered:
    match inp:
        case ExtractFactsInput():
            return extract_facts.render(inp)
        case DecideFactsInput():
            return decide_facts.render(inp)
        case ExtractReflectionsInput():
            return extract_reflections.render(inp)
        case ConsolidateInput():
            return consolidate.render(inp)
        case SameFactInput():
            return same_fact.render(inp)


__all__ = [
    "ConsolidateInput",
    "DecideFactsInput",
    "ExtractFactsInput",
    "ExtractReflectionsInput",
    "PromptMessage",
    "Rendered",
    "SameFactInput",
    "TaskInput",
    "render",
    "tag",
]
