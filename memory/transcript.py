"""Stored messages as the prompts show them: who spoke, in which role, when."""

from __future__ import annotations

from collections.abc import Sequence

from memory.models import StoredMessage
from memory.prompts.common import PromptMessage


def speaker(message: StoredMessage) -> str:
    return message.name or message.user_id or message.agent_id or message.role


def prompt_messages(messages: Sequence[StoredMessage]) -> list[PromptMessage]:
    return [
        PromptMessage(
            seq=m.seq, role=m.role, name=speaker(m), content=m.content, created_at=m.created_at
        )
        for m in messages
    ]
