"""What a search accepts (``memory.rag.search_facts``, and the HTTP schema's query bound): its
queries, cleaned and counted, and its top_k."""

from __future__ import annotations

from collections.abc import Sequence

from memory.errors import InvalidInputError
from memory.input_rules import require_storable
from memory.settings import RagSettings

MAX_QUERY_CHARS = 2000


def clean_queries(queries: Sequence[str], settings: RagSettings) -> list[str]:
    """Stripped, deduplicated (case-insensitively, first spelling kept); 1..max_queries given."""
    if isinstance(queries, str):
        raise InvalidInputError("queries must be a list of strings, not one string")
    if not 1 <= len(queries) <= settings.max_queries:
        raise InvalidInputError(
            f"search_facts takes 1 to {settings.max_queries} queries, got {len(queries)}"
        )
    kept: dict[str, str] = {}
    for position, query in enumerate(queries, start=1):
        if not isinstance(query, str):
            raise InvalidInputError(f"query {position} is not a string")
        text = require_storable(query, f"query {position}").strip()
        if not text:
            raise InvalidInputError(f"query {position} is empty")
        if len(text) > MAX_QUERY_CHARS:
            raise InvalidInputError(f"query {position} is longer than {MAX_QUERY_CHARS} characters")
        kept.setdefault(text.casefold(), text)
    return list(kept.values())


def check_top_k(top_k: int | None, settings: RagSettings) -> int:
    if top_k is None:
        return settings.top_k_default
    if not settings.top_k_min <= top_k <= settings.top_k_max:
        raise InvalidInputError(
            f"top_k must be between {settings.top_k_min} and {settings.top_k_max}, got {top_k}"
        )
    return top_k
