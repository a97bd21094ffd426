"""A change of some fields of an agent's configuration, decided once for every backend.

The store applies it to the configuration it reads in the transaction that writes the result
(MemoryStore.update_agent): two changes of different fields at once both hold, where a merge
outside that transaction would write back the field the other one changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pydantic import ValidationError

from memory.errors import InvalidInputError
from memory.models import AgentConfig
from memory.store.rules.writes import Plan, PutAgent, Request

# What a change may set: every field but the id, which names the agent being changed.
CHANGEABLE = frozenset(AgentConfig.model_fields) - {"agent_id"}


def check_agent_changes(changes: Mapping[str, object]) -> None:
    """InvalidInputError naming the fields a change may not set (before any transaction)."""
    if refused := sorted(set(changes) - CHANGEABLE):
        raise InvalidInputError(f"agent fields that cannot change: {', '.join(refused)}")


def changed_agent(current: AgentConfig, changes: Mapping[str, object]) -> AgentConfig:
    """``current`` with ``changes`` (field: value) set, the other fields as they are, validated as
    a whole. InvalidInputError naming the field when a value is not admitted."""
    check_agent_changes(changes)
    try:
        return AgentConfig.model_validate({**current.model_dump(), **changes})
    except ValidationError as e:
        raise InvalidInputError(f"invalid agent configuration: {e}") from e


@dataclass(frozen=True)
class AgentRequest(Request[AgentConfig | None]):
    """The registered agent with this id, or None."""

    agent_id: str


def plan_upsert_agent(config: AgentConfig, _current: AgentConfig | None) -> Plan[None]:
    return Plan((PutAgent(config),), None)


def plan_update_agent(
    change: Callable[[AgentConfig], AgentConfig], current: AgentConfig | None
) -> Plan[AgentConfig | None]:
    """``change`` of the stored configuration written in its place (MemoryStore.update_agent);
    None, nothing written, without one."""
    if current is None:
        return Plan((), None)
    changed = change(current)
    return Plan((PutAgent(changed),), changed)
