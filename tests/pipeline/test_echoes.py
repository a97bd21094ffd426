"""Items that repeat the prompt's instructions are not memory (memory/pipeline/echoes.py). The
echoes here are what Qwen2.5-Coder-1.5B answered on the quality bench's hand-made conversation
(tests/bench/fixtures/real-model), citing no message."""

from __future__ import annotations

import pytest

from memory.pipeline.echoes import echoes_instructions
from memory.prompts.extract_facts import INSTRUCTIONS as FACT_INSTRUCTIONS
from memory.prompts.extract_reflections import INSTRUCTIONS

WINDOW = [
    "Hi Ben! I started a new job at Lumen Labs this week.",
    "Congrats Ana! I adopted a beagle called Biscuit on Saturday.",
    "That is lovely. I live in Lisbon now, near the river. Please always answer me in Spanish.",
]


@pytest.mark.parametrize(
    "echo",
    [
        "preferences and directives ('always respond in Spanish'), expertise and communication style",
        "user-specific context that should always be present; how to interact with this user",
        "The agent should always have in context across ALL conversations: updates to its persona, "
        "character or communication style; ongoing projects, plans, ideas, roadmaps",
        "current status of ongoing tasks and tool calls; instructions given for this session",
    ],
)
def test_a_reflection_that_repeats_the_instructions_is_an_echo(echo: str) -> None:
    assert echoes_instructions(echo, False, INSTRUCTIONS, WINDOW)


@pytest.mark.parametrize(
    "grounded",
    [
        "Ana wants answers in Spanish",  # shares the instructions' example, but Ana said it
        "Ana started a new job at Lumen Labs and moved to Lisbon",
        "Ben is a new dog owner and shares his news with Ana",
    ],
)
def test_a_reflection_about_the_window_is_kept(grounded: str) -> None:
    assert not echoes_instructions(grounded, False, INSTRUCTIONS, WINDOW)


def test_an_item_that_cites_a_message_is_never_an_echo() -> None:
    echo = "user-specific context that should always be present; how to interact with this user"
    assert not echoes_instructions(echo, True, INSTRUCTIONS, WINDOW)


def test_short_items_are_not_judged() -> None:
    assert not echoes_instructions("communication style", False, INSTRUCTIONS, WINDOW)


def test_facts_are_checked_against_their_own_instructions() -> None:
    echo = "Enduring: likely to remain true for at least a month."
    assert echoes_instructions(echo, False, FACT_INSTRUCTIONS, WINDOW)
    assert not echoes_instructions(echo, False, INSTRUCTIONS, WINDOW)
    grounded = "Ana lives in Lisbon near the river"
    assert not echoes_instructions(grounded, False, FACT_INSTRUCTIONS, WINDOW)
