"""The search tools' arguments over MCP (stdio's ``search_facts``, /mcp's ``search``): the bounds
the OpenAPI document's SearchRequest states, in the tools' input schemas. The checks themselves
stay those of every search (memory.search_input, which answers a tool error); the bounds that
live in settings are stated in the description, built with the server."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from memory.input_rules import WholeInt
from memory.model_types import Id
from memory.settings import RagSettings
from serve.schemas import Query

__all__ = ["Id", "Queries", "TopK", "bounds"]

# At least one query, each storable and not blank (maxItems is rag.max_queries: ``bounds``).
Queries = Annotated[list[Query], Field(min_length=1)]
# rag.top_k_min is at least 1 whatever the settings; the configured range: ``bounds``. A JSON
# true or "3" is refused as the HTTP search's top_k refuses it (WholeInt's check). The bound
# comes before that check, on the int itself: after it, pydantic's input schema says "ge", not
# "minimum".
TopK = Annotated[int, Field(ge=1), *WholeInt.__metadata__]


def bounds(rag: RagSettings) -> str:
    """The settings' bounds of a search, as the tool descriptions say them."""
    return (
        f"1 to {rag.max_queries} short queries; top_k: {rag.top_k_min} to {rag.top_k_max} facts "
        f"per query (default {rag.top_k_default})"
    )
