"""Prompt texts (seed 001 §4.4, §6.3, §7.2 with the criteria of 002). Rendering only: no I/O.

Everything the conversation or a stored memory contributes is placed inside XML-like tags and escaped,
so a message cannot close a tag and pose as an instruction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from xml.sax.saxutils import escape

from memory.models import AgentConfig

FACTS_SYSTEM = (
    "You extract durable, searchable facts from conversations for an AI agent's long-term memory."
)

FACTS_PROMPT = """You are extracting factual information from a conversation of the agent {agent_name}.
{persona_block}{instructions_block}
<conversation>
{conversation}
</conversation>

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

For each fact choose its scope{scope_choice}
Note: do NOT extract session-only facts. Session context is handled by reflections.

Guidelines:
- At most {max_words} words per fact.
- Only extract genuinely new information stated in the conversation; never invent.
- Return an empty list if there are no facts."""

DECIDE_SYSTEM = (
    "You manage a fact database: you compare new facts with similar stored ones and decide."
)

DECIDE_PROMPT = """Compare new facts against existing memories and decide what to do with each new fact.

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

REFLECTIONS_SYSTEM = (
    "You maintain an AI agent's evolving memory: interpreted insights that shape its behaviour."
)

REFLECTIONS_PROMPT = """You are updating the memory of the agent {agent_name} based on a conversation.
{persona_block}{instructions_block}
{memory_blocks}
<newly_formed_facts>
{new_facts}
</newly_formed_facts>

<conversation>
{conversation}
</conversation>

Extract reflections in HIERARCHICAL ORDER. Each level only contains information NOT already captured at
a higher level, in the current memory or in the newly formed facts.
{scope_sections}
Guidelines:
- Reflections are interpreted insights (not raw facts); do NOT repeat the newly formed facts.
- At most {max_words} words per reflection.
- Return empty lists where nothing meaningful applies{disabled_note}."""

_SCOPE_SECTIONS = {
    "agent": """
### AGENT REFLECTIONS (broadest scope, extract first)
What the agent should always have in context across ALL conversations:
- updates to its persona, character or communication style
- ongoing projects, plans, ideas, roadmaps; learnings about its users or community
- domain knowledge and insights that apply universally
""",
    "user": """
### USER REFLECTIONS (exclude what the agent reflections hold)
What is specific to THIS USER:
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

CONSOLIDATE_SYSTEM = (
    "You consolidate an AI agent's memory reflections into one concise, versioned summary."
)

CONSOLIDATE_PROMPT = """You are consolidating {scope} memory reflections of the agent {agent_name}.

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


def tag(text: str) -> str:
    """Escape text placed inside a prompt tag."""
    return escape(text)


def _agent_blocks(agent: AgentConfig) -> tuple[str, str]:
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


def facts_prompt(
    agent: AgentConfig, conversation: str, scopes: Sequence[str], max_words: int
) -> str:
    persona, instructions = _agent_blocks(agent)
    choices = {
        "user": '\n- "user": about this specific user, relevant across all conversations with them',
        "agent": '\n- "agent": relevant to all conversations of this agent, across all users',
    }
    scope_choice = ":" + "".join(choices[s] for s in ("user", "agent") if s in scopes)
    return FACTS_PROMPT.format(
        agent_name=tag(agent.name),
        persona_block=persona,
        instructions_block=instructions,
        conversation=conversation,
        scope_choice=scope_choice,
        max_words=max_words,
    )


def decide_prompt(
    new_facts: Sequence[tuple[int, str]],
    existing: Sequence[tuple[str, Sequence[int]]],
    max_words: int,
) -> str:
    """``new_facts`` holds (index, content); ``existing`` (content, candidate-for new indices) per index."""
    new_lines = "\n".join(f"{i}. {tag(text)}" for i, text in new_facts)
    old_lines = "\n".join(
        f"{i}. {tag(text)} (candidate for new facts {', '.join(map(str, cands))})"
        for i, (text, cands) in enumerate(existing)
    )
    return DECIDE_PROMPT.format(new_facts=new_lines, existing=old_lines, max_words=max_words)


def reflections_prompt(
    agent: AgentConfig,
    conversation: str,
    scopes: Sequence[str],
    current: Mapping[str, tuple[str, Sequence[str]]],
    new_facts: Sequence[str],
    max_words: int,
) -> str:
    persona, instructions = _agent_blocks(agent)
    blocks = []
    for scope in scopes:
        blob, recent = current.get(scope, ("", ()))
        recent_lines = "\n".join(f"- {tag(r)}" for r in recent) or "(none)"
        blocks.append(
            f"<current_{scope}_memory>\n{tag(blob) or '(none yet)'}\nRecent:\n{recent_lines}\n</current_{scope}_memory>\n"
        )
    disabled = [s for s in ("agent", "user") if s not in scopes]
    disabled_note = (
        f"; {' and '.join(disabled)} reflections are disabled here: return empty lists for them"
        if disabled
        else ""
    )
    return REFLECTIONS_PROMPT.format(
        agent_name=tag(agent.name),
        persona_block=persona,
        instructions_block=instructions,
        memory_blocks="\n".join(blocks),
        new_facts="\n".join(f"- {tag(f)}" for f in new_facts) or "(none)",
        conversation=conversation,
        scope_sections="".join(
            _SCOPE_SECTIONS[s] for s in ("agent", "user", "session") if s in scopes
        ),
        max_words=max_words,
        disabled_note=disabled_note,
    )


def consolidate_prompt(
    agent: AgentConfig,
    scope: str,
    current: str,
    reflections: Sequence[str],
    next_version: int,
    word_limit: int,
) -> str:
    return CONSOLIDATE_PROMPT.format(
        scope=scope,
        agent_name=tag(agent.name),
        current=tag(current) or "None yet",
        reflections="\n".join(f"- {tag(r)}" for r in reflections),
        focus=_CONSOLIDATE_FOCUS[scope],
        next_version=next_version,
        word_limit=word_limit,
    )
