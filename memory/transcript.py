"""Stored messages as the prompts show them: who spoke, in which role, when; and how many of them
fit one formation's budget (``formation.max_tokens_per_run``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory.models import StoredMessage
from memory.prompts.common import PromptMessage, one_line

GUEST = "guest"


def speaker(message: StoredMessage) -> str:
    """The speaker's display name, on one line. A user message carries the id of the agent it was
    recorded for, never its speaker's: a guest (no user id, no name) is shown as one, not as the
    agent, whose memory would otherwise say the agent said it."""
    name = one_line(message.name or "")
    if message.role == "user":
        return name or message.user_id or GUEST
    return name or message.agent_id or message.role


_MARKER = re.compile(r"\s*\[truncated: \d+ more characters\]")


def shown(content: str, max_chars: int | None) -> str:
    """The content as a prompt shows it: cut at ``max_chars`` with a marker saying so."""
    if max_chars is None or len(content) <= max_chars:
        return content
    return f"{content[:max_chars]} [truncated: {len(content) - max_chars} more characters]"


def as_said(text: str) -> str:
    """An extracted item's text on one line, without the cut markers of ``shown``: the prompt
    said them, nobody in the conversation did (a model copies them with the words they follow)."""
    return " ".join(_MARKER.sub(" ", text).split())


def prompt_messages(
    messages: Sequence[StoredMessage], max_chars: int | None = None
) -> list[PromptMessage]:
    """The speaker id is a user message's user_id: what a user-scope memory is attributed to."""
    return [
        PromptMessage(
            seq=m.seq,
            role=m.role,
            name=speaker(m),
            content=shown(m.content, max_chars),
            created_at=m.created_at,
            user_id=m.user_id if m.role == "user" else None,
        )
        for m in messages
    ]


def fitting(messages: Sequence[StoredMessage], max_chars: int) -> int:
    """How many of ``messages`` (at least one) fit ``max_chars`` of content, each counted as its
    prompt shows it (truncated)."""
    used = 0
    for n, m in enumerate(messages):
        used += min(len(m.content), max_chars)
        if used > max_chars and n > 0:
            return n
    return len(messages)
