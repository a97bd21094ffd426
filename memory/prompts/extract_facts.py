"""Extract facts (seed 001 §4.4 with the criteria of 002): durable, searchable facts of a window."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memory.input_rules import ModelText
from memory.models import AgentConfig
from memory.prompts.common import (
    AGENT_SCOPE_RULE,
    ENVELOPE_TOKENS,
    ITEM_TOKENS,
    MAX_CITED,
    MAX_ITEMS,
    MAX_SPEAKER_CHARS,
    MAX_TEXT_CHARS,
    MEMORY_SYSTEM,
    ModelOutput,
    PromptInput,
    PromptMessage,
    Rendered,
    transcript_head,
)

# Shared with reflections, as is the start of the prompt (common.transcript_head).
SYSTEM = MEMORY_SYSTEM

TEMPLATE = """{transcript_head}
Your task: extract factual information from this conversation.

Extract atomic facts: objective statements that stand alone without the conversation.
Facts are for RETRIEVAL ONLY: they are not shown by default, the agent searches them when needed.

A fact must be:
1. Searchable: it answers a specific question (who, what, where, when).
2. Specific: it contains names, numbers, dates or specific entities.
3. Enduring: likely to remain true for at least a month.
4. Self-contained: name people and things explicitly; resolve "I", "you", "tomorrow" and other relative
   references using the speakers and message timestamps (write absolute dates).

Do NOT extract as facts (these belong to reflections, extracted separately):
- preferences and behaviour ("Alice likes concise answers")
- current context ("we are debugging X"), ephemeral state ("the build is failing right now")
- opinions ("Bob thinks we should use React")

For each fact cite its sources: the numbers (n) of the messages it comes from, the message that
states it first; never a number that is not in the conversation.

For each fact choose its scope, and name its speaker:
- "user": about the person who said it, relevant across all conversations with them; "speaker" is
  the speaker_id of their message (null when the message has none).
- "agent": relevant to all conversations of this agent, across all users; "speaker" is null.
{agent_rule}
Classify every fact by what it is; which scopes are kept is decided after you answer.
Note: do NOT extract session-only facts. Session context is handled by reflections.

Guidelines:
- At most {max_words} words per fact.
- Only extract genuinely new information stated in the conversation; never invent.
- List the facts in the order they were said (a later correction after what it corrects).
- Return an empty list if there are no facts."""

# What the model is told, as opposed to what it reads (memory.pipeline.echoes).
INSTRUCTIONS = SYSTEM + TEMPLATE


class ExtractFactsInput(PromptInput):
    task: Literal["extract_facts"] = "extract_facts"
    agent: AgentConfig
    messages: list[PromptMessage]
    max_words: int


class ExtractedFact(ModelOutput):
    content: ModelText = Field(
        max_length=MAX_TEXT_CHARS, description="One atomic, self-contained fact, at most 30 words"
    )
    scope: Literal["user", "agent"] = Field(
        description="user: about the person who said it; agent: for all users, never private"
    )
    speaker: ModelText | None = Field(
        None,
        max_length=MAX_SPEAKER_CHARS,
        description="user scope: the speaker_id of the message it comes from, else null",
    )
    sources: list[int] | None = Field(
        None,
        max_length=MAX_CITED,
        description="The numbers (n) of the messages it comes from",
    )


class ExtractedFacts(ModelOutput):
    """The output schema."""

    facts: list[ExtractedFact] = Field(max_length=MAX_ITEMS)


def render(inp: ExtractFactsInput) -> Rendered:
    return Rendered(
        system=SYSTEM,
        user=TEMPLATE.format(
            transcript_head=transcript_head(inp.agent, inp.messages),
            agent_rule=AGENT_SCOPE_RULE,
            max_words=inp.max_words,
        ),
        max_output_tokens=ENVELOPE_TOKENS + ITEM_TOKENS * MAX_ITEMS,
    )
