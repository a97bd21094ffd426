"""The always-in-context memory: the ``<MemoryContext>`` XML put into every agent prompt (002).

Layout (empty parts omitted, everything empty → ""):

    <MemoryContext>
      <AgentMemory>            agent scope, when agent memory is on
        <EarlierReflections>   unabsorbed reflections said before what the blob holds
        - …                    (a conversation recorded late), oldest → newest said
        </EarlierReflections>
        <Consolidated>…</Consolidated>
        <RecentReflections>
        - …                    the newest unabsorbed reflections, oldest → newest said
        </RecentReflections>
      </AgentMemory>
      <UserMemory>…</UserMemory>        this user, when user memory is on and not a group chat
      <SessionMemory>…</SessionMemory>  this agent in this session, always
      <Facts>
      - [scope] content (said 8 May 2023, 3d ago)   the FIFO: newest first, bounded in count
                               and age; "(3d ago)" alone for a fact that records no said_at
      </Facts>
    </MemoryContext>

Every text is XML-escaped and stripped of the characters XML 1.0 cannot hold (control characters
such as ESC): memory holds what users said, a user's ``</UserMemory>`` must stay text and the
whole must parse as XML. A listed item is one line: its whitespace is collapsed, so a newline in a
fact cannot start a forged ``- [agent] …`` item. Which scopes a turn may see is decided once, by ``memory.scopes.visible_scopes``, for the
context and for search_facts alike.
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta
from xml.sax.saxutils import escape

from memory.dates import format_day, in_offset
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Reflection,
    ScopeKey,
    SessionInfo,
    said_before,
)
from memory.scopes import VisibleScopes, visible_scopes
from memory.settings import Settings
from memory.store.base import MemoryStore

# Re-exported: the retrieval code reads the visibility rule from here.
__all__ = [
    "VisibleScopes", "age_suffix", "assemble_context", "one_line", "visible_scopes", "when_said",
]  # fmt: skip

_SECTION = {"agent": "AgentMemory", "user": "UserMemory", "session": "SessionMemory"}
# What XML 1.0 cannot hold: C0 controls but tab/newline/return, surrogates, U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """Text as XML character data: escaped, without the characters XML cannot hold."""
    return escape(_NOT_XML.sub("", text))


def one_line(text: str) -> str:
    """A fact's or a reflection's text as one item: runs of whitespace (newlines too) are one
    space, so the text cannot pose as several "- ..." items wherever it is listed."""
    return " ".join(text.split())


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


def when_said(said_at: datetime | None, age: str, utc_offset_minutes: int | None = None) -> str:
    """What a fact's line says about its time, for the context and search_facts alike: the day it
    was said and how long ago ("said 8 May 2023, 3d ago"; the format of memory.dates), or the age
    alone for a fact that records no said_at (stores older than it). The day is the speaker's,
    on the clock ``utc_offset_minutes`` from UTC (UTC for None): the day the fact's relative dates
    were counted from, so "flying on 8 May" said at 22:30 -05:00 on the 7th says "said 7 May"."""
    if said_at is None:
        return age
    return f"said {format_day(in_offset(said_at, utc_offset_minutes).date())}, {age}"


def _fact_time(fact: Fact, now: datetime) -> str:
    """A fact's time as its line shows it: "said 8 May 2023, 3d ago" (the age counts from when it
    was said), or "3d ago" since it was stored when it records no said_at."""
    age = age_suffix(fact.said_at or fact.updated_at, now)
    return when_said(fact.said_at, age, fact.said_utc_offset_minutes)


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
    return "\n".join(f"- {xml_text(one_line(t))}" for t in texts)


def _scope_xml(
    key: ScopeKey, blob: ConsolidatedMemory | None, reflections: list[Reflection]
) -> str | None:
    parts = []
    # Read newest formed first (to bound them), shown oldest said first: the last line is the
    # latest said, also when a conversation recorded late was formed after it; and one said
    # before all the blob holds (its said_from) before the blob, which it does not undo.
    earlier, later = said_before(reversed(reflections), blob.said_from if blob else None)
    if earlier:
        texts = [r.content for r in earlier]
        parts.append(f"    <EarlierReflections>\n{_lines(texts)}\n    </EarlierReflections>")
    if blob is not None and blob.content.strip():
        parts.append(f"    <Consolidated>{xml_text(blob.content.strip())}</Consolidated>")
    if later:
        texts = [r.content for r in later]
        parts.append(f"    <RecentReflections>\n{_lines(texts)}\n    </RecentReflections>")
    if not parts:
        return None
    tag = _SECTION[key.scope]
    return f"  <{tag}>\n" + "\n".join(parts) + f"\n  </{tag}>"


def _facts_xml(facts: list[Fact], now: datetime) -> str | None:
    if not facts:
        return None
    lines = [f"[{f.scope}] {f.content} ({_fact_time(f, now)})" for f in facts]
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
        # Recent means recently said (the store selects by said_at): a fact formed today from an
        # old conversation (an import, a backlog) was not news this week.
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
