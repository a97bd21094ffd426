"""Extract reflections (seed 001 §7.2 with 002): interpreted insights, hierarchical agent → user →
session, aware of the current memory and of the facts this window formed."""

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
    MAX_SPEAKER_CHARS,
    MAX_TEXT_CHARS,
    MEMORY_SYSTEM,
    ModelOutput,
    PromptInput,
    PromptMessage,
    Rendered,
    tag,
    transcript_head,
)
from memory.settings_scope import Scope

# Shared with fact extraction, as is the start of the prompt (common.transcript_head).
SYSTEM = MEMORY_SYSTEM

TEMPLATE = """{transcript_head}
Your task: update the agent's memory based on this conversation.

{memory_blocks}
<newly_formed_facts>
{new_facts}
</newly_formed_facts>

Extract reflections in HIERARCHICAL ORDER. Each level only contains information NOT already captured at
a higher level, in the current memory or in the newly formed facts. Classify every reflection by
what it is; which scopes are kept is decided after you answer (a user reflection that cannot be
kept as user memory stays in this session's memory, never in the agent's).
{agent_rule}
Each reflection names its speaker: for a user reflection the speaker_id of the messages it comes
from (null when they have none), else null; and cites its sources: the numbers (n) of the messages
it comes from.
{scope_sections}
Guidelines:
- Reflections are interpreted insights (not raw facts); do NOT repeat the newly formed facts.
- At most {max_words} words per reflection.
- Return empty lists where nothing meaningful applies."""

_SCOPE_SECTIONS = {
    "agent": """
### AGENT REFLECTIONS (broadest scope, extract first)
What the agent should always have in context across ALL conversations:
- updates to its persona, character or communication style
- ongoing projects, plans, ideas, roadmaps; learnings about its community as a whole
- domain knowledge and insights that apply universally
""",
    "user": """
### USER REFLECTIONS (exclude what the agent reflections hold)
What is specific to ONE USER, the one who said it:
- preferences and directives ("always respond in Spanish"), expertise and communication style
- user-specific context that should always be present; how to interact with this user
""",
    "session": """
### SESSION REFLECTIONS (exclude what agent and user reflections hold)
What is specific to THIS SESSION:
- current status of ongoing tasks and tool calls; instructions given for this session
- what has happened so far (a rolling summary); assets to keep at hand (URLs, images)
""",
}


# What the model is told, as opposed to what it reads: an answer made of these words is an echo
# (memory.pipeline.echoes).
INSTRUCTIONS = SYSTEM + TEMPLATE + "".join(_SCOPE_SECTIONS.values())

# Reflections of one scope from one window: a handful is what a window holds.
MAX_REFLECTIONS = 8


class CurrentMemory(PromptInput):
    """A scope's memory as the prompt shows it: its blob and its newest unabsorbed reflections."""

    consolidated: str = ""
    recent: list[str] = Field(default_factory=list, description="Oldest → newest")


class ExtractReflectionsInput(PromptInput):
    task: Literal["extract_reflections"] = "extract_reflections"
    agent: AgentConfig
    messages: list[PromptMessage]
    scopes: tuple[Scope, ...] = Field(description="The enabled reflection scopes")
    current: dict[Scope, CurrentMemory]
    new_facts: list[str]
    max_words: int


class ExtractedReflection(ModelOutput):
    content: ModelText = Field(
        max_length=MAX_TEXT_CHARS, description="One interpreted insight, at most 35 words"
    )
    speaker: ModelText | None = Field(
        None,
        max_length=MAX_SPEAKER_CHARS,
        description="user reflections: the speaker_id it is about, else null",
    )
    sources: list[int] | None = Field(
        None,
        max_length=MAX_CITED,
        description="The numbers (n) of the messages it comes from",
    )


class ExtractedReflections(ModelOutput):
    """The output schema."""

    agent_reflections: list[ExtractedReflection] = Field(max_length=MAX_REFLECTIONS)
    user_reflections: list[ExtractedReflection] = Field(max_length=MAX_REFLECTIONS)
    session_reflections: list[ExtractedReflection] = Field(max_length=MAX_REFLECTIONS)


def render(inp: ExtractReflectionsInput) -> Rendered:
    blocks = []
    for scope in inp.scopes:
        memory = inp.current.get(scope, CurrentMemory())
        recent_lines = "\n".join(f"- {tag(r)}" for r in memory.recent) or "(none)"
        blocks.append(
            f"<current_{scope}_memory>\n{tag(memory.consolidated) or '(none yet)'}\nRecent:\n{recent_lines}\n</current_{scope}_memory>\n"
        )
    return Rendered(
        system=SYSTEM,
        user=TEMPLATE.format(
            transcript_head=transcript_head(inp.agent, inp.messages),
            memory_blocks="\n".join(blocks),
            new_facts="\n".join(f"- {tag(f)}" for f in inp.new_facts) or "(none)",
            agent_rule=AGENT_SCOPE_RULE,
            scope_sections="".join(_SCOPE_SECTIONS.values()),
            max_words=inp.max_words,
        ),
        max_output_tokens=ENVELOPE_TOKENS + ITEM_TOKENS * MAX_REFLECTIONS * 3,
    )
