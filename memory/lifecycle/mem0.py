"""mem0 → mnemos: the JSON of mem0's ``get_all`` (OSS ``Memory`` and the platform ``MemoryClient``).

Accepted shapes: ``{"results": [...]}`` (mem0 ≥ 1.0 and the platform's v2 pages), a bare list
(older ``get_all``), ``{"memories": [...]}``, or JSON Lines of items (one line of them too). An item is
``{"id", "memory", "hash", "metadata", "created_at", "updated_at", "user_id"?, "agent_id"?,
"run_id"?, "actor_id"?, "role"?, ...}``; timestamps are ISO 8601 (mem0 writes US/Pacific
offsets). mem0 scopes a memory by whichever of user_id / agent_id / run_id it carries:

| mem0 item                     | mnemos                                              |
| ----------------------------- | --------------------------------------------------- |
| user_id (+ agent_id)          | user fact of that agent (or of ``default_agent``)   |
| agent_id only                 | agent fact                                          |
| run_id only                   | dropped: mnemos keeps no session-scoped facts       |

An id listed twice (pages or dumps joined while mem0 updated the memory: it keeps the id and
changes the text) is one memory: the latest ``updated_at`` is kept, the others dropped.

get_all carries no vectors: every fact is embedded by the store's model on import.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memory.lifecycle.records import (
    AgentImport,
    Dropped,
    FactImport,
    ImportBatch,
    SourceRef,
    as_utc,
    dedup_facts,
    is_id,
)

COLLECTION = "memories"
NO_AGENT = "no agent_id (give a default agent for user memories)"
RUN_ONLY = "run-scoped only: mnemos keeps no session-scoped facts"
BAD_ID = "id is not a valid mnemos id"
EMPTY = "empty memory"
EXPIRED = "expired in mem0 (expiration_date passed)"
SAME_ID = "mem0 memory id listed more than once: its latest version (updated_at) is kept"
UNREADABLE = "unreadable item"
# An item with no timestamp at all sorts before every dated version of its id.
_UNDATED = datetime.min.replace(tzinfo=UTC)


class Mem0Item(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    memory: str = Field(min_length=0)
    hash: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    expiration_date: datetime | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


def load_items(text: str) -> list[dict[str, Any]]:
    """The memory items of a get_all dump, whichever shape it has; ValueError if none fits."""
    stripped = text.strip()
    try:
        data: Any = json.loads(stripped) if stripped else []
    except json.JSONDecodeError:
        data = [json.loads(line) for line in stripped.splitlines() if line.strip()]
    if isinstance(data, Mapping):
        data = _unwrap(data)
    if not isinstance(data, list) or not all(isinstance(i, Mapping) for i in data):
        raise ValueError("mem0 dump must be a list of memory objects")
    return [dict(i) for i in data]


def _unwrap(data: Mapping[str, Any]) -> list[Any]:
    """The items of a whole-file JSON object: a page of them, or one memory (JSON Lines of one
    line parses as a whole file too)."""
    for key in ("results", "memories"):
        if isinstance(data.get(key), list):
            return list(data[key])
    if "memory" in data or "id" in data:
        return [data]
    raise ValueError("mem0 JSON object without a 'results' or 'memories' list")


def _item(raw: Mapping[str, Any]) -> Mem0Item:
    # The vector store's raw payload names the text ``data``; get_all renames it ``memory``.
    if "memory" not in raw and "data" in raw:
        raw = {**raw, "memory": raw["data"]}
    return Mem0Item.model_validate(raw)


def _why_dropped(
    item: Mem0Item, agent: str | None, user: str | None, now: datetime
) -> tuple[str, str] | None:
    if user is None and item.agent_id is None:
        return (RUN_ONLY if item.run_id else NO_AGENT), ""
    if agent is None:
        return NO_AGENT, ""
    for value in (agent, user):
        if value is not None and not is_id(value):
            return BAD_ID, repr(value)
    if not item.memory.strip():
        return EMPTY, ""
    if item.expiration_date is not None and as_utc(item.expiration_date) <= now:
        return EXPIRED, ""
    return None


def _read(items: list[dict[str, Any]]) -> tuple[list[tuple[SourceRef, Mem0Item]], list[Dropped]]:
    readable: list[tuple[SourceRef, Mem0Item]] = []
    dropped: list[Dropped] = []
    for raw in items:
        source = SourceRef(system="mem0", collection=COLLECTION, source_id=str(raw.get("id")))
        try:
            readable.append((source, _item(raw)))
        except ValueError as e:
            dropped.append(Dropped(source=source, reason=UNREADABLE, detail=str(e)[:300]))
    return readable, dropped


def _version(item: Mem0Item) -> tuple[datetime, str]:
    # Equal timestamps fall back to the text so the choice does not depend on the dump's order.
    stamp = item.updated_at or item.created_at
    return (as_utc(stamp) if stamp else _UNDATED), item.memory


def _quote(item: Mem0Item) -> str:
    return repr(item.memory.strip()[:100])


def _latest_versions(
    readable: list[tuple[SourceRef, Mem0Item]],
) -> tuple[list[tuple[SourceRef, Mem0Item]], list[Dropped]]:
    """One item per mem0 id, its latest version: the fact id derives from the mem0 id (with its
    agent and user), so two versions would be one fact, and whichever came first would win."""
    latest: dict[str, tuple[SourceRef, Mem0Item]] = {}
    for source, item in readable:
        seen = latest.get(item.id)
        if seen is None or _version(item) > _version(seen[1]):
            latest[item.id] = (source, item)
    dropped = [
        Dropped(
            source=source,
            agent_id=item.agent_id,
            user_id=item.user_id,
            reason=SAME_ID,
            detail=f"kept {_quote(latest[item.id][1])}, not {_quote(item)}",
        )
        for source, item in readable
        if latest[item.id][1] is not item
    ]
    return list(latest.values()), dropped


def map_mem0(
    items: list[dict[str, Any]], *, default_agent: str | None = None, now: datetime
) -> ImportBatch:
    """mem0 items → import records; ``now`` dates undated items and decides expiry."""
    readable, dropped = _read(items)
    current, older = _latest_versions(readable)
    dropped += older
    facts: list[FactImport] = []
    agents: dict[str, AgentImport] = {}
    for source, item in current:
        agent = item.agent_id or default_agent
        user = item.user_id
        why = _why_dropped(item, agent, user, now)
        if why is not None or agent is None:
            reason, detail = why or (NO_AGENT, "")
            dropped.append(
                Dropped(source=source, agent_id=agent, user_id=user, reason=reason, detail=detail)
            )
            continue
        agents.setdefault(agent, AgentImport(agent_id=agent))
        facts.append(_fact(source, item, agent, user, now))
    # The oldest of equal texts is kept, whatever order the dump lists them in.
    facts.sort(key=lambda f: (f.formed_at, f.source.source_id))
    kept, duplicates = dedup_facts(facts)
    return ImportBatch(
        agents=tuple(agents.values()), facts=tuple(kept), dropped=tuple(dropped + duplicates)
    )


def _fact(
    source: SourceRef, item: Mem0Item, agent: str, user: str | None, now: datetime
) -> FactImport:
    created = as_utc(item.created_at) if item.created_at else now
    return FactImport(
        # The agent may be --agent's: the same dump imported for another agent is its facts.
        fact_id=source.owned_id("f", agent, user),
        other_id=source.derived_id("f"),  # the id imports of before gave it (placement.place)
        agent_id=agent,
        user_id=user,
        scope="user" if user else "agent",
        content=item.memory.strip(),
        formed_at=created,
        updated_at=as_utc(item.updated_at) if item.updated_at else created,
        source_session_id=item.run_id if is_id(item.run_id) else None,
        source=source,
    )
