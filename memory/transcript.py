"""Stored messages as the prompts show them: who spoke, in which role, when."""

from __future__ import annotations

from collections.abc import Sequence

from memory.models import StoredMessage
from memory.prompts.common import PromptMessage, one_line


def speaker(message: StoredMessage) -> str:
    """The speaker's display name, on one line."""
    name = one_line(message.name or "")
    return name or message.user_id or message.agent_id or message.role


def prompt_messages(messages: Sequence[StoredMessage]) -> list[PromptMessage]:
    """The speaker id is a user message's user_id: what a user-scope memory is attributed to."""
    return [
        PromptMessage(
            seq=m.seq,
            role=m.role,
            name=speaker(m),
            content=m.content,
            created_at=m.created_at,
            user_id=m.user_id if m.role == "user" else None,
        )
        for m in messages
    ]
