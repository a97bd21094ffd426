"""Step 7: reflections, hierarchical agent → user → session, aware of current memory and new facts."""

from __future__ import annotations

from memory import prompts, transcript
from memory.deps import Deps
from memory.ids import content_hash
from memory.llm import choose_model
from memory.llm.base import LLMRequest
from memory.pipeline.types import NewReflection, ReflectionsResult, Window
from memory.pipeline.usage import llm_call, words
from memory.schemas import ExtractedReflections
from memory.settings import Scope

_WORD_SLACK = 1.25


async def current_memory(deps: Deps, window: Window) -> dict[str, tuple[str, list[str]]]:
    """Consolidated blob and newest unabsorbed reflections of each enabled scope."""
    recent_n = deps.settings.reflections.recent_in_context
    current: dict[str, tuple[str, list[str]]] = {}
    for scope in window.reflection_scopes:
        key = window.scope_key(scope)
        blob = await deps.store.get_consolidated(key)
        recent = await deps.store.unabsorbed_reflections(key, limit=recent_n, newest_first=True)
        current[scope] = (blob.content if blob else "", [r.content for r in reversed(recent)])
    return current


async def extract_reflections(
    deps: Deps, window: Window, new_facts: list[str]
) -> ReflectionsResult:
    agent = await deps.store.get_agent(window.agent_id)
    assert agent is not None  # load_window checked it
    messages = await deps.store.load_messages(window.session_id, window.after_seq, window.upto_seq)
    current = await current_memory(deps, window)
    max_words = deps.settings.reflections.max_words
    request = LLMRequest(
        task="extract_reflections",
        model=choose_model(deps.settings, deps.llm.name, "reflection", agent.tier),
        system=prompts.REFLECTIONS_SYSTEM,
        prompt=prompts.reflections_prompt(
            agent,
            transcript.render(messages),
            window.reflection_scopes,
            current,
            new_facts,
            max_words,
        ),
        payload={
            "messages": transcript.payload(messages),
            "new_facts": new_facts,
            "scopes": list(window.reflection_scopes),
            "current": {s: {"consolidated": b, "recent": r} for s, (b, r) in current.items()},
            "max_words": max_words,
        },
        temperature=deps.settings.models.temperature,
    )
    result = await deps.llm.generate_structured(request, ExtractedReflections)
    out = result.value
    by_scope: list[tuple[Scope, list[str]]] = [
        ("agent", [r.content for r in out.agent_reflections]),
        ("user", [r.content for r in out.user_reflections]),
        ("session", [r.content for r in out.session_reflections]),
    ]
    kept: list[NewReflection] = []
    seen: set[str] = set()
    for scope, texts in by_scope:
        if scope not in window.reflection_scopes:
            continue  # a disabled scope is never written, whatever the model returned
        for raw in texts:
            text = " ".join(raw.split())
            key = content_hash(text)
            if text and words(text) <= max_words * _WORD_SLACK and key not in seen:
                seen.add(key)
                kept.append(NewReflection(scope=scope, content=text))
    return ReflectionsResult(reflections=kept, llm=[llm_call(request, result.usage)])
