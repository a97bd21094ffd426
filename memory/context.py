"""The always-in-context memory: the ``<MemoryContext>`` XML put into every agent prompt (002).

Layout (empty parts omitted, everything empty → ""):

    <MemoryContext>
      <AgentMemory>            agent scope, when agent memory is on
        <Consolidated>…</Consolidated>
        <RecentReflections>
        - …                    the newest unabsorbed reflections, oldest → newest
        </RecentReflections>
      </AgentMemory>
      <UserMemory>…</UserMemory>        this user, when user memory is on and not a group chat
      <SessionMemory>…</SessionMemory>  this agent in this session, always
      <Facts>
      - [scope] content (age)  the FIFO: newest first, bounded in count and age
      </Facts>
    </MemoryContext>

Every text is XML-escaped: memory holds what users said, and a user's ``</UserMemory>`` must stay
text. Which scopes a turn may see is decided once, by ``visible_scopes``, for the context and for
search_facts alike.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta
from xml.sax.saxutils import escape

from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    FactFilter,
    FactScope,
    Reflection,
    ScopeKey,
    SessionInfo,
)
from memory.pipeline.window import scopes_for
from memory.settings import Scope, Settings
from memory.store.base import MemoryStore

_SECTION = {"agent": "AgentMemory", "user": "UserMemory", "session": "SessionMemory"}


@dataclass(frozen=True)
class VisibleScopes:
    """What one agent turn may read: fact scopes and the reflection/blob keys, in context order."""

    fact_filter: FactFilter | None  # None: no fact scope is on
    keys: tuple[ScopeKey, ...]


def visible_scopes(
    agent: AgentConfig, session: SessionInfo | None, user_id: str | None
) -> VisibleScopes:
    """The toggles and the group-chat rule of ``scopes_for``, bound to this user.

    User memory needs a user: ``user_id`` must be given and, in a session, be the session's only
    user (a second user makes it a group chat, and a user not in the session reads nothing of
    theirs there). Without a session (a search outside any conversation) only the toggles count.
    """
    if session is None:
        toggles: list[FactScope] = []
        if agent.agent_memory_enabled:
            toggles.append("agent")
        if agent.user_memory_enabled:
            toggles.append("user")
        fact_scopes: tuple[FactScope, ...] = tuple(toggles)
        scopes: tuple[Scope, ...] = fact_scopes
        user_ok = user_id is not None
    else:
        fact_scopes, scopes = scopes_for(agent, session)
        user_ok = user_id is not None and session.user_ids == (user_id,)
    if not user_ok:
        fact_scopes = tuple(s for s in fact_scopes if s != "user")
        scopes = tuple(s for s in scopes if s != "user")

    fact_filter = None
    if fact_scopes:
        fact_filter = FactFilter(
            agent_id=agent.agent_id,
            include_agent_scope="agent" in fact_scopes,
            user_id=user_id if "user" in fact_scopes else None,
        )
    keys = []
    for scope in scopes:
        match scope:
            case "agent":
                keys.append(ScopeKey(scope="agent", agent_id=agent.agent_id))
            case "user":
                keys.append(ScopeKey(scope="user", agent_id=agent.agent_id, user_id=user_id))
            case "session" if session is not None:
                keys.append(
                    ScopeKey(
                        scope="session", agent_id=agent.agent_id, session_id=session.session_id
                    )
                )
    return VisibleScopes(fact_filter=fact_filter, keys=tuple(keys))


def age_suffix(then: datetime, now: datetime) -> str:
    """How long ago, coarsely: 'just now', '5m ago', '3h ago', '2d ago' (the future: 'just now')."""
    seconds = (now - then).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)}m ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h ago"
    return f"{int(seconds // 86400)}d ago"


async def _scope_part(
    store: MemoryStore, key: ScopeKey, recent: int
) -> tuple[ConsolidatedMemory | None, list[Reflection]]:
    blob_task = store.get_consolidated(key)
    if recent == 0:
        return await blob_task, []
    blob, reflections = await asyncio.gather(
        blob_task, store.unabsorbed_reflections(key, limit=recent, newest_first=True)
    )
    return blob, reflections


def _lines(texts: list[str]) -> str:
    return "\n".join(f"- {escape(t)}" for t in texts)


def _scope_xml(
    key: ScopeKey, blob: ConsolidatedMemory | None, reflections: list[Reflection]
) -> str | None:
    parts = []
    if blob is not None and blob.content.strip():
        parts.append(f"    <Consolidated>{escape(blob.content.strip())}</Consolidated>")
    if reflections:
        # Read newest first (to bound them), shown in the order they were formed.
        texts = [r.content for r in reversed(reflections)]
        parts.append(f"    <RecentReflections>\n{_lines(texts)}\n    </RecentReflections>")
    if not parts:
        return None
    tag = _SECTION[key.scope]
    return f"  <{tag}>\n" + "\n".join(parts) + f"\n  </{tag}>"


def _facts_xml(facts: list[Fact], now: datetime) -> str | None:
    if not facts:
        return None
    lines = [f"[{f.scope}] {f.content} ({age_suffix(f.updated_at, now)})" for f in facts]
    return f"  <Facts>\n{_lines(lines)}\n  </Facts>"


async def assemble_context(
    store: MemoryStore,
    settings: Settings,
    *,
    agent: AgentConfig,
    session: SessionInfo,
    user_id: str | None,
    now: datetime,
) -> str:
    """The ``<MemoryContext>`` XML of one agent turn, or "" when there is nothing to show."""
    visible = visible_scopes(agent, session, user_id)
    recent = settings.reflections.recent_in_context
    fifo = settings.facts
    parts = [_scope_part(store, key, recent) for key in visible.keys]

    facts: list[Fact] = []
    if visible.fact_filter is not None and fifo.fifo_enabled and fifo.fifo_limit > 0:
        since = now - timedelta(hours=fifo.fifo_max_age_hours)
        scope_parts, facts = await asyncio.gather(
            asyncio.gather(*parts),
            store.recent_facts(visible.fact_filter, since=since, limit=fifo.fifo_limit),
        )
    else:
        scope_parts = await asyncio.gather(*parts)

    sections = [
        _scope_xml(key, blob, reflections)
        for key, (blob, reflections) in zip(visible.keys, scope_parts, strict=True)
    ]
    sections.append(_facts_xml(facts, now))
    shown = [s for s in sections if s is not None]
    if not shown:
        return ""
    return "<MemoryContext>\n" + "\n".join(shown) + "\n</MemoryContext>"
