"""Consolidate (seed 001 §7 with 002): merge a scope's buffered reflections into its word-limited,
versioned blob.

The model answers bounded list items (sections of short bullet points), never one free text: a
grammar-constrained small model cannot loop inside an item past its bound, and nothing it writes
can break the blob's shape. mnemos writes the blob itself (``blob_text``): its ``VERSION: n`` line,
each section's ``[TITLE]`` line and its ``- `` bullets, the form the memory context shows (002)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from memory.ids import normalize_text
from memory.input_rules import ModelText
from memory.models import AgentConfig
from memory.prompts.common import (
    ENVELOPE_TOKENS,
    MAX_TEXT_CHARS,
    ModelOutput,
    PromptInput,
    Rendered,
    one_line,
    tag,
)
from memory.settings_scope import Scope

# The blob's first line; management reads it.
VERSION_LINE = re.compile(r"^\s*VERSION:\s*(\d+)\s*$")

# A bullet is one insight, bounded as a reflection is.
MAX_ITEM_CHARS = MAX_TEXT_CHARS
MAX_TITLE_CHARS = 40
# Bounds of the list, whatever the word limit: the limit itself is checked after parsing.
MAX_SECTIONS = 8
MAX_ITEMS_PER_SECTION = 24

SYSTEM = "You consolidate an AI agent's memory reflections into one concise summary."

TEMPLATE = """You are consolidating {scope} memory reflections of the agent {agent_name}.

<current_consolidated_memory>
{current}
</current_consolidated_memory>

<new_reflections>
{reflections}
</new_reflections>

Merge the new reflections into the existing memory, creating an updated summary.
{focus}

Rules:
- Answer with sections, each a short title in capitals (like PREFERENCES) and its items: one
  insight per item, one sentence each. Keep the existing sections where they still fit.
- Preserve important existing insights; integrate the new information.
- Resolve contradictions: newer information wins. Drop what is outdated.
- Never invent information; never repeat an item.
- At most {word_limit} words in total.

Answer in JSON: {{"sections": [{{"title": "...", "items": ["...", "..."]}}]}}"""

# When the batch holds reflections said before what the memory holds (a conversation recorded
# late): they come first, and the rule on contradictions says which is newer. A batch without
# them reads TEMPLATE as it always was (recorded answers of real models stay valid).
EARLIER = """<earlier_reflections>
{earlier}
</earlier_reflections>

"""
EARLIER_RULE = (
    "- The earlier reflections were said before anything the memory holds: where one\n"
    "  contradicts the memory, the memory wins.\n"
)
_MEMORY_OPEN = "<current_consolidated_memory>"
_MERGE = ("Merge the new reflections", "Merge the earlier and the new reflections")
_RULES_END = "- Never invent information; never repeat an item.\n"

_CONSOLIDATE_FOCUS = {
    "agent": "Focus on persona evolution, project status and domain learnings: what should the agent always know?",
    "user": "Focus on preferences, directives and interaction style: how should the agent interact with this user?",
    "session": "Focus on what happened, current task status and temporary instructions: the rolling context of this conversation.",
}


# What the model is told, as opposed to what it reads: a draft made of these words is an echo
# (memory.pipeline.echoes).
INSTRUCTIONS = SYSTEM + TEMPLATE + EARLIER_RULE + "".join(_CONSOLIDATE_FOCUS.values())


class ConsolidateInput(PromptInput):
    task: Literal["consolidate"] = "consolidate"
    agent: AgentConfig
    scope: Scope
    current_content: str
    current_version: int
    # Oldest said first (memory.models.in_said_order): "newer information wins" reads the list's
    # order, so the latest said is the newer whenever it was formed.
    reflections: list[str]
    word_limit: int
    # Said before all the memory holds (ConsolidatedMemory.said_from), oldest said first: older
    # than it, whenever they were formed.
    earlier: list[str] = Field(default_factory=list)

    @property
    def next_version(self) -> int:
        return self.current_version + 1


Item = Annotated[ModelText, StringConstraints(max_length=MAX_ITEM_CHARS)]


class ConsolidatedSection(ModelOutput):
    title: ModelText = Field(
        max_length=MAX_TITLE_CHARS, description="The section's title in capitals, e.g. PREFERENCES"
    )
    items: list[Item] = Field(
        max_length=MAX_ITEMS_PER_SECTION, description="One insight per item, one sentence each"
    )


class ConsolidatedSections(ModelOutput):
    """The output schema."""

    sections: list[ConsolidatedSection] = Field(max_length=MAX_SECTIONS)


def version_line(version: int) -> str:
    return f"VERSION: {version}"


_BULLET = re.compile(r"^[-*•](?:\s+|$)")  # a bullet the model wrote itself ("-5 °C" is no bullet)
# A line that only heads what follows: blob_text's "[TITLE]", a Markdown heading (an import's).
_HEADING = re.compile(r"^(?:\[[^\]]*\]|#+(?:\s.*)?)$")


def blob_text(answer: ConsolidatedSections, next_version: int) -> str:
    """The blob mnemos stores: ``VERSION: n``, then each section's ``[TITLE]`` and bullets.

    Whitespace is collapsed, so an item is one line; a bullet or bracket the model added itself is
    not doubled; a title given twice gathers its items under its first place; empty items and
    sections are left out (a title-less section has no title line). An item given twice, as
    normalize_text tells texts apart, is kept once, the later (the newer: items are answered
    oldest first, the blob's then the reflections'); a code in another letter case ("Tr0ub4dor",
    "tr0ub4dor") is another value, both kept."""
    placed: dict[str, tuple[str, str]] = {}  # each item's title and text, at its latest place
    for section in answer.sections:
        title = one_line(section.title).strip("[]# ").upper()
        for raw in section.items:
            item = _BULLET.sub("", one_line(raw))
            if item:
                placed.pop(normalize_text(item), None)
                placed[normalize_text(item)] = (title, item)
    sections: dict[str, list[str]] = {}
    for section in answer.sections:  # titles in the order the answer gave them
        sections.setdefault(one_line(section.title).strip("[]# ").upper(), [])
    for title, item in placed.values():
        sections[title].append(f"- {item}")
    lines = [version_line(next_version)]
    for title, items in sections.items():
        if items:
            lines += [f"[{title}]", *items] if title else items
    return "\n".join(lines)


def blob_items(blob: str) -> list[str]:
    """A blob's items, oldest first: every line but its version and its headings, bullet marker
    off. A person's edit or an import may be plain lines or other bullets: each is an item."""
    lines = (one_line(line) for line in _without_version(blob).splitlines())
    return [
        item
        for line in lines
        if line and not _HEADING.match(line)
        for item in [_BULLET.sub("", line)]
        if item
    ]


def _without_version(blob: str) -> str:
    """The blob as the model reads it: its version is mnemos's business, not the model's."""
    lines = blob.strip().splitlines()
    return "\n".join(lines[1:] if lines and VERSION_LINE.match(lines[0]) else lines)


def _template(inp: ConsolidateInput) -> str:
    if not inp.earlier:
        return TEMPLATE
    return (
        TEMPLATE.replace(_MEMORY_OPEN, EARLIER + _MEMORY_OPEN, 1)
        .replace(*_MERGE, 1)
        .replace(_RULES_END, EARLIER_RULE + _RULES_END, 1)
    )


def _bullets(texts: list[str]) -> str:
    return "\n".join(f"- {tag(t)}" for t in texts)


def render(inp: ConsolidateInput) -> Rendered:
    return Rendered(
        system=SYSTEM,
        user=_template(inp).format(
            scope=inp.scope,
            agent_name=tag(inp.agent.name),
            current=tag(_without_version(inp.current_content)) or "None yet",
            # (None said after the memory: all of the batch is earlier.)
            reflections=_bullets(inp.reflections) or ("None" if inp.earlier else ""),
            earlier=_bullets(inp.earlier),
            focus=_CONSOLIDATE_FOCUS[inp.scope],
            word_limit=inp.word_limit,
        ),
        # About 1.3 tokens a word, twice for the tolerance, the titles and the JSON around items.
        max_output_tokens=ENVELOPE_TOKENS + 2 * inp.word_limit,
    )
