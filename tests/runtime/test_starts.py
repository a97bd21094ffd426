"""The search attributes a run starts with: `forget` deletes a user's closed runs by
MnemosUserId, so a run that carries a user's words is tagged with them."""

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


async def test_a_run_is_tagged_with_the_agents_one_participant_in_a_group_chat_too() -> None:
    """carol alone in mallory's view of a channel where others spoke (to another agent, or as
    guests) is a group chat, no user memory there; but the run holds what she said, and her
    forget must find it."""
    at = datetime(2026, 11, 27, tzinfo=UTC)
    alone = SessionInfo(session_id="s1", user_ids=("carol",), created_at=at)
    channel = alone.model_copy(update={"session_user_ids": ("alice", "bob", "carol")})
    with_guest = alone.model_copy(update={"has_guests": True})
    two = alone.model_copy(update={"user_ids": ("carol", "dave")})

    assert channel.is_group and with_guest.is_group
    assert [await _user_tag(s) for s in (alone, channel, with_guest, two)] == [
        "carol",
        "carol",
        "carol",
        None,
    ]
