"""Whether a configuration leaves the reflection step room on a small model's context.

Every window's ``extract_reflections`` prompt carries a part no split of the window makes smaller:
its instructions, the agent's name, persona and memory instructions, and each scope's memory (its
blob, up to its word limit and tolerance, and its newest unabsorbed reflections). When that part
with one ordinary message leaves the answer less than memory/llm/context_fit.py requires, every
window is split down to single messages and each one's reflections are passed over: reflection
memory stops forming for every session of the agent, because of its configuration. So such a
configuration is refused where it is set (settings at load, an agent when registered or changed),
with the numbers, instead of being found by every window.

The worst case is the real prompt (memory/prompts/extract_reflections.py) rendered with texts at
their limits and measured with context_fit's estimate. A word is taken as 6 characters with its
space (2 tokens at context_fit's 3 characters a token, as a consolidation's output cap counts it):
an ordinary English word, not the longest one could write.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from memory.errors import InvalidInputError
from memory.llm.base import LLMRequest
from memory.llm.context_fit import (
    CHARS_PER_TOKEN,
    MARGIN_TOKENS,
    MIN_ANSWER_TOKENS,
    prompt_tokens,
)
from memory.models import AgentConfig
from memory.prompts.common import PromptMessage
from memory.prompts.extract_reflections import CurrentMemory, ExtractReflectionsInput
from memory.settings_scope import Scope


# What is read of memory.settings.Settings, which checks itself with this module when it loads:
# imported, it would be a module importing one that imports it back.
class ReflectionLimits(Protocol):
    @property
    def max_words(self) -> int: ...
    @property
    def word_limit_tolerance(self) -> float: ...
    @property
    def recent_in_context(self) -> int: ...
    def word_limit(self, scope: Scope) -> int: ...


class FactLimits(Protocol):
    @property
    def max_words(self) -> int: ...


class ModelContext(Protocol):
    @property
    def context_tokens(self) -> int | None: ...


class Settings(Protocol):
    @property
    def reflections(self) -> ReflectionLimits: ...
    @property
    def facts(self) -> FactLimits: ...
    @property
    def models(self) -> ModelContext: ...


WORD = "xxxxx"
# What must fit beside the fixed part: an ordinary turn of about 100 words and the facts that
# restate it (a longer message is split or passed over alone, which promise 2 allows).
ORDINARY_MESSAGE_WORDS = 100
SCOPES: tuple[Scope, ...] = ("agent", "user", "session")
# The settings the fixed part grows with, as an operator sets them.
SETTINGS_NAMED = (
    "MNEMOS_REFLECTIONS__WORD_LIMIT_AGENT, __WORD_LIMIT_USER, __WORD_LIMIT_SESSION, "
    "__WORD_LIMIT_TOLERANCE, __RECENT_IN_CONTEXT, __MAX_WORDS"
)
# The agent's fields its prompts carry: a change of another one (a switch, the tier) is not checked.
PROMPT_FIELDS = frozenset({"name", "persona", "memory_instructions"})
# An agent with no persona or instructions: what settings alone must leave room for.
_BARE_AGENT = AgentConfig(agent_id="agent", name="agent")


@dataclass(frozen=True)
class Budget:
    """The worst-case reflection prompt of a configuration against the model's context."""

    prompt_tokens: int
    context_tokens: int

    @property
    def needed(self) -> int:
        """The context the prompt and the least answer context_fit sends need."""
        return self.prompt_tokens + MARGIN_TOKENS + MIN_ANSWER_TOKENS

    @property
    def fits(self) -> bool:
        return self.needed <= self.context_tokens

    @property
    def over(self) -> int:
        return self.needed - self.context_tokens


def _words(count: int) -> str:
    return " ".join([WORD] * count)


def _full_memory(cfg: ReflectionLimits, scope: Scope) -> CurrentMemory:
    """A scope's memory at its largest: the blob at its word limit with the accepted overshoot
    (as memory/pipeline/consolidation.py admits it), the most recent reflections shown."""
    blob_words = int(cfg.word_limit(scope) * (1 + cfg.word_limit_tolerance))
    return CurrentMemory(
        consolidated=_words(blob_words),
        recent=[_words(cfg.max_words)] * cfg.recent_in_context,
    )


def worst_case_input(settings: Settings, agent: AgentConfig) -> ExtractReflectionsInput:
    """The reflection step's input of ``agent`` with every scope full and one ordinary message."""
    cfg = settings.reflections
    message = PromptMessage(
        seq=1,
        role="user",
        name="user",
        content=_words(ORDINARY_MESSAGE_WORDS),
        created_at=datetime(2000, 1, 1, tzinfo=UTC),
    )
    fact_count = math.ceil(ORDINARY_MESSAGE_WORDS / settings.facts.max_words)
    return ExtractReflectionsInput(
        agent=agent,
        messages=[message],
        scopes=SCOPES,
        current={scope: _full_memory(cfg, scope) for scope in SCOPES},
        new_facts=[_words(settings.facts.max_words)] * fact_count,
        max_words=cfg.max_words,
    )


def reflection_budget(settings: Settings, agent: AgentConfig, context_tokens: int) -> Budget:
    request = LLMRequest.of(worst_case_input(settings, agent), model="budget")
    return Budget(prompt_tokens=prompt_tokens(request), context_tokens=context_tokens)


def settings_problem(settings: Settings) -> str | None:
    """Why these settings leave no room for a window's reflections, or None (also without
    ``models.context_tokens``: a hosted model's context is far larger)."""
    context = settings.models.context_tokens
    if context is None:
        return None
    budget = reflection_budget(settings, _BARE_AGENT, context)
    if budget.fits:
        return None
    return (
        f"reflections: the word limits, recent_in_context and max_words ({SETTINGS_NAMED}) make "
        f"every window's reflection prompt need about {budget.needed} tokens with one ordinary "
        f"message and the least answer, over models.context_tokens {context} "
        f"(MNEMOS_MODELS__CONTEXT_TOKENS) by {budget.over}: lower them"
    )


def agent_problem(settings: Settings, agent: AgentConfig) -> str | None:
    """Why ``agent``'s persona and memory instructions leave no room for a window's reflections
    on the configured model, or None (also without ``models.context_tokens``)."""
    context = settings.models.context_tokens
    if context is None:
        return None
    budget = reflection_budget(settings, agent, context)
    if budget.fits:
        return None
    over_chars = math.ceil(budget.over * CHARS_PER_TOKEN)
    return (
        f"agent {agent.agent_id!r}: its persona and memory_instructions, with the memory's word "
        f"limits ({SETTINGS_NAMED}), make every window's reflection prompt need about "
        f"{budget.needed} tokens, over the model's context of {context} "
        f"(MNEMOS_MODELS__CONTEXT_TOKENS) by {budget.over}: shorten them by about "
        f"{over_chars} characters"
    )


def check_agent_fits(settings: Settings, agent: AgentConfig) -> None:
    """InvalidInputError, before anything is written, for an agent whose reflection prompt cannot
    fit the configured model's context."""
    if problem := agent_problem(settings, agent):
        raise InvalidInputError(problem)
