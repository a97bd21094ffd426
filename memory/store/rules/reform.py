"""Which degraded windows a re-form marks re-formed (MemoryStore.mark_reformed), decided once for
every backend over the agent's records of the session not re-formed yet."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from memory.degraded import DegradedWindow
from memory.store.rules.writes import MarkReformed, Plan, Request


@dataclass(frozen=True)
class ReformRequest(Request[list[DegradedWindow]]):
    """The agent's records of the session whose reformed_at is not set."""

    session_id: str
    agent_id: str


def plan_mark_reformed(
    after_seq: int,
    upto_seq: int,
    steps: Collection[str],
    at: datetime,
    records: list[DegradedWindow],
) -> Plan[int]:
    """The records of ``steps`` within the range (their after_seq >= after_seq and upto_seq <=
    upto_seq) re-formed at ``at``; one re-formed already keeps its date. How many."""
    keys = tuple(
        r.key
        for r in records
        if r.step in steps and after_seq <= r.after_seq and r.upto_seq <= upto_seq
    )
    return Plan((MarkReformed(keys, at),) if keys else (), len(keys))
