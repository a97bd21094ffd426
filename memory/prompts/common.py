"""What every prompt shares: escaping, the agent's blocks, the conversation, the base models.

Everything the conversation or a stored memory contributes is placed inside XML-like tags and
escaped, so a message cannot close a tag and pose as an instruction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from pydantic import BaseModel, ConfigDict

from memory.models import AgentConfig, Role, UtcDatetime

# Bounds of every output schema (maxLength / maxItems, which OpenAI strict structured outputs and
# Gemini's response_schema both accept): a model that loops inside a string or a list is cut by the
# schema, not by the token cap. A fact or reflection is ~35 words; 400 characters leave room.
MAX_TEXT_CHARS = 400
MAX_ITEMS = 40
# Output tokens of one bounded item: its text (~4 characters a token) and the JSON around it.
ITEM_TOKENS = MAX_TEXT_CHARS // 4 + 24
# The JSON object around the items.
ENVELOPE_TOKENS = 64


class PromptInput(BaseModel):
    """Base of a task's typed input: what the prompt renders, and what the offline heuristic reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelOutput(BaseModel):
    """Base of a task's output schema. The schemas avoid defaults and use nullable fields instead,
    so they are valid for OpenAI strict structured outputs and Gemini ``response_schema`` alike."""

    model_config = ConfigDict(extra="ignore")


class PromptMessage(PromptInput):
    """One conversation line as the prompts show it."""

    seq: int
    role: Role
    name: str
    content: str
    created_at: UtcDatetime


@dataclass(frozen=True)
class Rendered:
    system: str
    user: str
    max_output_tokens: int  # the output cap that fits the task's schema


def tag(text: str) -> str:
    """Escape text placed inside a prompt tag."""
    return escape(text)


def conversation(messages: Sequence[PromptMessage]) -> str:
    """Speaker, role and timestamp on every line, so that relative dates ("tomorrow", "last week")
    can be resolved by the model."""
    lines = []
    for m in messages:
        stamp = m.created_at.strftime("%Y-%m-%d %H:%M UTC")
        lines.append(f"[{stamp}] {tag(m.name)} ({m.role}): {tag(m.content)}")
    return "\n".join(lines)


def agent_blocks(agent: AgentConfig) -> tuple[str, str]:
    """The persona block and the memory-instructions block (each "" when not set)."""
    persona = (
        f"\n<agent_persona>\n{tag(agent.persona)}\n</agent_persona>\n" if agent.persona else ""
    )
    instructions = (
        f"\n<memory_instructions>\nThe agent's owner asks you to follow these when deciding what to remember:\n"
        f"{tag(agent.memory_instructions)}\n</memory_instructions>\n"
        if agent.memory_instructions
        else ""
    )
    return persona, instructions
