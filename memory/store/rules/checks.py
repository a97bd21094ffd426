"""The checks of commit_formation (and of a search query's dimension), written once."""

from __future__ import annotations

from memory.errors import (
    ConflictError,
    EmbeddingMismatchError,
    InvalidInputError,
    NotFoundError,
    StaleDecisionError,
)
from memory.formation_commit import FactAdd, FactUpdate, FormationCommit
from memory.models import SessionAgentState


def check_cursor(state: SessionAgentState | None, commit: FormationCommit) -> SessionAgentState:
    """The cursor is where the formation started, and the range it formed exists."""
    if state is None:
        raise NotFoundError(f"agent {commit.agent_id} is not in session {commit.session_id}")
    if state.cursor_seq != commit.expected_cursor:
        raise ConflictError(
            f"cursor of {commit.agent_id} in {commit.session_id} is {state.cursor_seq}, "
            f"not {commit.expected_cursor}"
        )
    if not commit.expected_cursor <= commit.new_cursor <= state.last_seq:
        raise InvalidInputError(
            f"new cursor {commit.new_cursor} outside [{commit.expected_cursor}, {state.last_seq}]"
        )
    return state


def commit_dimension(commit: FormationCommit) -> int | None:
    """The one dimension of the commit's vectors (None without any)."""
    dims = {len(op.embedding) for op in commit.fact_ops if isinstance(op, FactAdd | FactUpdate)}
    if not dims:
        return None
    if len(dims) > 1:
        raise EmbeddingMismatchError(f"vectors of several dimensions in one commit: {sorted(dims)}")
    dimension = dims.pop()
    if dimension == 0:
        raise InvalidInputError("empty embedding")
    return dimension


def check_embedding_meta(commit: FormationCommit, dimension: int, stored: tuple[str, int]) -> None:
    """Vectors of another model or dimension than the stored facts' would be silent garbage."""
    if stored != (commit.embedding_model, dimension):
        raise EmbeddingMismatchError(
            f"commit has {commit.embedding_model}/{dimension}, stored facts have {stored[0]}/{stored[1]}"
        )


def check_current(fact_id: str, *, version: int, invalidated: bool, expected_version: int) -> None:
    """A decision made against another version of the fact (or an invalidated one) is stale."""
    if version != expected_version or invalidated:
        raise StaleDecisionError(
            f"fact {fact_id} is at version {version}{' (invalidated)' if invalidated else ''}, "
            f"decision saw {expected_version}"
        )


def check_query_dimension(meta: tuple[str, int], dimension: int) -> None:
    """A query vector of another dimension than the stored facts' cannot be compared."""
    if meta[1] != dimension:
        raise EmbeddingMismatchError(
            f"query has dimension {dimension}, stored facts have {meta[1]} ({meta[0]})"
        )
