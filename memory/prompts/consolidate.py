"""Consolidate (seed 001 §7 with 002): merge a scope's buffered reflections into its word-limited,
versioned blob. The output is plain text whose first line is ``VERSION: n+1``."""

from __future__ import annotations

import re
from typing import Literal

from memory.models import AgentConfig
from memory.prompts.common import ENVELOPE_TOKENS, PromptInput, Rendered, tag
from memory.settings import Scope

# The output's first line; the draft step checks it, management reads it.
VERSION_LINE = re.compile(r"^\s*VERSION:\s*(\d+)\s*$")

SYSTEM = "You consolidate an AI agent's memory reflections into one concise, versioned summary."

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
- The first line is exactly "VERSION: {next_version}".
- Keep the section structure (lines like "[SECTION]" followed by "- " bullet points).
- Preserve important existing insights; integrate the new information.
- Resolve contradictions: newer information wins. Drop what is outdated.
- Never invent information.
- At most {word_limit} words in total.

Return ONLY the updated consolidated memory text."""

_CONSOLIDATE_FOCUS = {
    "agent": "Focus on persona evolution, project status and domain learnings: what should the agent always know?",
    "user": "Focus on preferences, directives and interaction style: how should the agent interact with this user?",
    "session": "Focus on what happened, current task status and temporary instructions: the rolling context of this conversation.",
}


class ConsolidateInput(PromptInput):
    task: Literal["consolidate"] = "consolidate"
    agent: AgentConfig
    scope: Scope
    current_content: str
    current_version: int
    reflections: list[str]
    word_limit: int

    @property
    def next_version(self) -> int:
        return self.current_version + 1


def render(inp: ConsolidateInput) -> Rendered:
    return Rendered(
        system=SYSTEM,
        user=TEMPLATE.format(
            scope=inp.scope,
            agent_name=tag(inp.agent.name),
            current=tag(inp.current_content) or "None yet",
            reflections="\n".join(f"- {tag(r)}" for r in inp.reflections),
            focus=_CONSOLIDATE_FOCUS[inp.scope],
            next_version=inp.next_version,
            word_limit=inp.word_limit,
        ),
        # About 1.3 tokens a word, twice for the tolerance and the section lines.
        max_output_tokens=ENVELOPE_TOKENS + 2 * inp.word_limit,
    )
