"""Erasing a user: every memory of them an agent holds, hard-deleted (issue 15)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from client.memory_client import ForgetResult
from serve.auth import ID_PATTERN, EraseAgent, Svc

router = APIRouter(prefix="/v1/agents/{agent_id}", tags=["users"])
UserPath = Annotated[str, Path(pattern=ID_PATTERN)]


@router.delete("/users/{user_id}")
async def forget_user(agent_id: EraseAgent, user_id: UserPath, svc: Svc) -> ForgetResult:
    """Hard-delete the user's facts (with history), user memory, messages and cache entries of
    this agent, then their closed workflow executions; returns what was deleted. Only a key
    created with ``--erase`` may (403 otherwise). A formation
    running for the user meanwhile writes nothing of them. Agent-scope memory stays."""
    return await svc.memory.forget_user(agent_id, user_id)
