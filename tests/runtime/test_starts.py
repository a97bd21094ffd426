"""The search attributes a run starts with: `forget` deletes a user's closed runs by
MnemosUserId, so a run is tagged with a user only where the session is theirs alone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from temporalio.client import Client
from temporalio.common import TypedSearchAttributes

from memory.models import SessionInfo
from memory.settings import Settings
from runtime.starts import start_formation
from workflows.naming import USER_ID


class _Recording:
    """Stands in for the Temporal client: keeps what start_workflow was given."""

    def __init__(self) -> None:
        self.started: list[dict[str, Any]] = []

    async def start_workflow(self, *args: Any, **kwargs: Any) -> None:
        self.started.append(kwargs)


async def _user_tag(session: SessionInfo) -> str | None:
    client = _Recording()
    await start_formation(cast(Client, client), Settings(), session, "mallory", force=False)
    attributes: TypedSearchAttributes = client.started[0]["search_attributes"]
    return attributes.get(USER_ID)


async def test_a_run_is_tagged_with_its_sessions_only_user_and_a_group_chats_with_none() -> None:
    at = datetime(2026, 11, 27, tzinfo=UTC)
    alone = SessionInfo(session_id="s1", user_ids=("carol",), created_at=at)
    # carol alone in mallory's view of a channel where alice and bob spoke to another agent
    channel = alone.model_copy(update={"session_user_ids": ("alice", "bob", "carol")})

    assert await _user_tag(alone) == "carol"
    assert await _user_tag(channel) is None
