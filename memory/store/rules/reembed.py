"""The re-embedding switch (mnemos reembed), planned once for every backend: the facts take their
side vectors only when every fact has one for its current content (see
MemoryStore.switch_embedding)."""

from __future__ import annotations

from dataclasses import dataclass

from memory.errors import ConflictError
from memory.store.rules.writes import Plan, Request, SwapSideVectors


@dataclass(frozen=True)
class SwitchRequest(Request[tuple[int, int]]):
    """(facts pending a re-embed into (model, dimension), all facts): see
    base_manage.reembed_target."""

    model: str
    dimension: int


def plan_switch(model: str, dimension: int, pending: tuple[int, int]) -> Plan[int]:
    """Refused (nothing changed) while a fact has no side vector; returns the facts switched."""
    left, total = pending
    if left:
        raise ConflictError(
            f"{left} of {total} facts have no {model} vector of {dimension} dimensions yet: "
            "re-embed them first"
        )
    return Plan((SwapSideVectors(model, dimension),), total)
