"""A page of a fact listing and its cursors: what ``MemoryManager.list_facts`` answers, and the
opaque tokens (a fact's listing key, ``store.fact_key``) that read the pages beside it."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory.errors import InvalidInputError
from memory.models import Fact
from memory.store.base_manage import Keyset, fact_key


class FactPage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    facts: list[Fact]
    offset: int
    limit: int
    has_more: bool  # older facts follow: next_cursor reads them
    valid_total: int  # valid facts within the filter, whatever the page
    next_cursor: str | None = None  # the older facts after this page (None: none)
    prev_cursor: str | None = None  # the newer facts before it (None: this is the first page)


def fact_page(
    facts: list[Fact], keyset: Keyset | None, *, offset: int, limit: int, valid_total: int
) -> FactPage:
    """The page of ``facts``, read ``limit + 1`` on the keyset's side (the one more tells that
    there is a page beyond), with the cursors of the pages beside it."""
    beyond = len(facts) > limit
    if keyset is not None and keyset.newer:
        shown = facts[-limit:] if beyond else facts  # the nearest: the newest one is beyond
        newer, older = beyond, True
    else:
        shown = facts[:limit]
        newer, older = keyset is not None or offset > 0, beyond
    return FactPage(
        facts=shown,
        offset=offset,
        limit=limit,
        has_more=older and bool(shown),
        valid_total=valid_total,
        next_cursor=_cursor("after", shown[-1]) if older and shown else None,
        prev_cursor=_cursor("before", shown[0]) if newer and shown else None,
    )


def _cursor(side: Literal["after", "before"], fact: Fact) -> str:
    """An opaque token for the facts listed ``side`` the fact (its listing key)."""
    at, fact_id = fact_key(fact)
    raw = json.dumps([side, at.isoformat(), fact_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(token: str) -> Keyset:
    """The keyset of a page's cursor; InvalidInputError for a token no listing gave."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        side, at, fact_id = json.loads(raw)
        when = datetime.fromisoformat(at)
        if when.tzinfo is None or side not in ("after", "before"):
            raise ValueError(side)
        key = (when.astimezone(UTC), str(fact_id))  # one a store can write (not year 0's edge)
    except (ValueError, TypeError, UnicodeDecodeError, OverflowError) as e:
        raise InvalidInputError(
            "page: the cursor is not one a fact listing gave (next_cursor, prev_cursor)"
        ) from e
    return Keyset(after=key, before=None) if side == "after" else Keyset(after=None, before=key)
