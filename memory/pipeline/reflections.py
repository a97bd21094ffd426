"""Step 7: reflections, hierarchical agent → user → session, aware of current memory and new facts."""

from __future__ import annotations

from datetime import UTC, datetime

from memory import transcript
from memory.dates import resolve_relative_dates
from memory.deps import Deps
from memory.errors import WindowTooLargeError
from memory.ids import content_hash
from memory.llm import choose_model
from memory.llm.base import FIRST, LLMRequest, Retry
from memory.models import StoredMessage, in_said_order
from memory.pipeline.echoes import echoes_instructions
from memory.pipeline.slices import merge_reflections
from memory.pipeline.sources import Sources, any_cited, cited
from memory.pipeline.types import NewReflection, ReflectionsResult, Window
from memory.pipeline.usage import llm_call
from memory.pipeline.window import answer_is_full, window_agent, window_messages
from memory.prompts.common import MAX_ITEMS
from memory.prompts.extract_reflections import (
    INSTRUCTIONS,
    MAX_REFLECTIONS,
    CurrentMemory,
    ExtractedReflection,
    ExtractedReflections,
    ExtractReflectionsInput,
)
from memory.scopes import as_owned, place_reflection, sole_speaker
from memory.settings import Scope


async def current_memory(deps: Deps, window: Window) -> dict[Scope, CurrentMemory]:
    """Consolidated blob and newest unabsorbed reflections of each enabled scope (the newest
    formed, shown oldest said first)."""
    recent_n = deps.settings.reflections.recent_in_context
    current: dict[Scope, CurrentMemory] = {}
    for scope in window.reflection_scopes:
        key = window.scope_key(scope)
        blob = await deps.store.get_consolidated(key)
        recent = await deps.store.unabsorbed_reflections(key, limit=recent_n, newest_first=True)
        current[scope] = CurrentMemory(
            consolidated=blob.content if blob else "",
            recent=[r.content for r in in_said_order(reversed(recent))],
        )
    return current


async def extract_reflections(
    deps: Deps,
    window: Window,
    new_facts: list[str],
    retry: Retry = FIRST,
    part: int | None = None,
) -> ReflectionsResult:
    """The window's reflections; ``part``: those of one slice of its one oversized message (None:
    every slice in turn, merged; memory/pipeline/slices.py)."""
    new_facts = _shown(new_facts)
    messages = await window_messages(deps, window)
    if not messages:
        # As facts.extract_facts: with no message, reflections could only be made up from the
        # current blobs.
        return ReflectionsResult(reflections=[])
    count = transcript.slice_count(
        messages, deps.settings.formation.max_chars_per_run, rule=window.slice_cut
    )
    if part is None and count > 1:
        return merge_reflections(
            [await _reflect(deps, window, messages, new_facts, retry, n) for n in range(count)]
        )
    if part is not None and part >= count:  # none such (the budget changed since the load)
        return ReflectionsResult(reflections=[])
    return await _reflect(deps, window, messages, new_facts, retry, part if count > 1 else None)


def _said_at(source: Sources | None, messages: list[StoredMessage]) -> datetime:
    """When a reflection was said, as an instant: its latest source message's time; for one the
    window does not ground, the window's latest (it interprets what was said up to there)."""
    if source is not None:
        return source.said_at.astimezone(UTC)
    return max(m.created_at for m in messages).astimezone(UTC)


def _shown(new_facts: list[str]) -> list[str]:
    """The formed facts a reflection prompt shows: every one of an ordinary window (it forms at
    most MAX_ITEMS), MAX_ITEMS spread evenly over a dense message read in pieces (up to
    pieces.MAX_DENSE_FACTS: shown whole, they would crowd the transcript out of a small model's
    context, for facts the reflections do not restate)."""
    n = len(new_facts)
    if n <= MAX_ITEMS:
        return new_facts
    return [new_facts[i * n // MAX_ITEMS] for i in range(MAX_ITEMS)]


async def _reflect(
    deps: Deps,
    window: Window,
    messages: list[StoredMessage],
    new_facts: list[str],
    retry: Retry,
    part: int | None,
) -> ReflectionsResult:
    agent = await window_agent(deps, window)
    max_words = deps.settings.reflections.max_words
    request = LLMRequest.of(
        ExtractReflectionsInput(
            agent=agent,
            messages=transcript.prompt_messages(
                messages, deps.settings.formation.max_chars_per_run, part, rule=window.slice_cut
            ),
            scopes=window.reflection_scopes,
            current=await current_memory(deps, window),
            new_facts=new_facts,
            max_words=max_words,
        ),
        model=choose_model(deps.settings, deps.llm.name, "reflection", agent.tier),
        temperature=deps.settings.models.temperature,
        retry=retry,
    )
    result = await deps.llm.generate_structured(request, ExtractedReflections)
    out = result.value
    by_scope: list[tuple[Scope, list[ExtractedReflection]]] = [
        ("agent", out.agent_reflections),
        ("user", out.user_reflections),
        ("session", out.session_reflections),
    ]
    fullest = max(len(items) for _, items in by_scope)
    # A slice is one message's, as a window of one is: its full answer is kept (slices.py).
    full = answer_is_full(deps, fullest, MAX_REFLECTIONS)
    if window.message_count > 1 and part is None and full:
        raise WindowTooLargeError(
            f"extract_reflections answered {fullest} reflections of one scope for "
            f"{window.message_count} messages, its bound is {MAX_REFLECTIONS}: the window is split"
        )
    kept: list[NewReflection] = []
    seen: set[str] = set()
    only = sole_speaker(messages, window.user_id)  # a left-out speaker can only be this user
    said = [m.content for m in messages]
    for classified, items in by_scope:
        for item in items:
            # A disabled scope is never written, whatever the model returned (memory.scopes).
            text = transcript.as_said(item.content)
            owned, speaker = as_owned(classified, item.speaker or only, text, messages)
            scope = place_reflection(
                owned,
                speaker,
                window.user_id,
                window.reflection_scopes,
                text=text,
                group=window.group,
            )
            key = content_hash(text)
            if (
                scope
                and text
                and key not in seen
                and not echoes_instructions(
                    text, any_cited(item.sources, messages), INSTRUCTIONS, said
                )
            ):
                # A reflection interprets; one the window does not ground is still kept, unsourced.
                source = cited(item.sources, messages, text, speaker if scope == "user" else None)
                if source is not None:
                    text = resolve_relative_dates(text, source.dates_from)
                seen.add(key)
                kept.append(
                    NewReflection(
                        scope=scope,
                        content=text,
                        source_message_ids=source.message_ids if source else (),
                        said_at=_said_at(source, messages),
                    )
                )
    return ReflectionsResult(reflections=kept, llm=[llm_call(request, result.usage)])
