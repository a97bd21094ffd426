"""Agents: register, read, change the configuration."""

from __future__ import annotations

from fastapi import APIRouter, status

from memory.errors import NotFoundError
from memory.models import AgentConfig
from serve.auth import CurrentKey, ReadAgent, Svc, WriteAgent, check
from serve.schemas import AgentPatch

router = APIRouter(prefix="/v1/agents", tags=["agents"])


async def _get(svc: Svc, agent_id: str) -> AgentConfig:
    agent = await svc.memory.store.get_agent(agent_id)
    if agent is None:
        raise NotFoundError(f"agent {agent_id!r} is not registered")
    return agent


@router.post("", status_code=status.HTTP_201_CREATED)
async def register_agent(config: AgentConfig, key: CurrentKey, svc: Svc) -> AgentConfig:
    """Register an agent (or replace its configuration): the key must cover its id."""
    check(key, config.agent_id, write=True)
    await svc.memory.register_agent(config)
    return config


@router.get("/{agent_id}")
async def get_agent(agent_id: ReadAgent, svc: Svc) -> AgentConfig:
    return await _get(svc, agent_id)


@router.patch("/{agent_id}")
async def update_agent(agent_id: WriteAgent, patch: AgentPatch, svc: Svc) -> AgentConfig:
    # Set in the store's writing transaction: a PATCH of other fields at once keeps its change.
    return await svc.memory.update_agent(agent_id, **patch.model_dump(exclude_unset=True))
