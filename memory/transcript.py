"""Conversation text for prompts: speaker, role and timestamp on every line, so that relative dates
("tomorrow", "last week") can be resolved by the model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory.models import StoredMessage
from memory.prompts import tag


def speaker(message: StoredMessage) -> str:
    return message.name or message.user_id or message.agent_id or message.role


def render(messages: Sequence[StoredMessage]) -> str:
    lines = []
    for m in messages:
        stamp = m.created_at.strftime("%Y-%m-%d %H:%M UTC")
        lines.append(f"[{stamp}] {tag(speaker(m))} ({m.role}): {tag(m.content)}")
    return "\n".join(lines)


def payload(messages: Sequence[StoredMessage]) -> list[dict[str, Any]]:
    """The structured form of the same messages (read by the heuristic provider)."""
    return [
        {
            "seq": m.seq,
            "role": m.role,
            "name": speaker(m),
            "content": m.content,
            "created_at": m.created_at.isoformat(),
        }
        for m in messages
    ]
