"""Which facts a FactFilter lets through, decided once for every backend: the agent's facts of
each scope the filter includes, the user scope of one user only. Backends translate the
branches into their queries (SQL terms, MongoDB filters, Atlas Search clauses) and add the
agent and, unless a listing asks for invalidated facts too, validity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memory.models import FactFilter


@dataclass(frozen=True)
class ScopeBranch:
    """The facts of one scope; for the user scope, of one user."""

    scope: Literal["agent", "user"]
    user_id: str | None = None

    def fields(self) -> dict[str, str]:
        """The fields a fact of the branch equals."""
        return {"scope": self.scope} | ({} if self.user_id is None else {"user_id": self.user_id})


def scope_branches(flt: FactFilter) -> list[ScopeBranch]:
    """The filter's scopes; none when it lets nothing through."""
    branches: list[ScopeBranch] = []
    if flt.include_agent_scope:
        branches.append(ScopeBranch("agent"))
    if flt.user_id is not None:
        branches.append(ScopeBranch("user", flt.user_id))
    return branches
