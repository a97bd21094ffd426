"""A message longer than the formation budget, read in slices: never cut, never skipped.

``load_window`` leaves such a message alone in its window (memory/transcript.py ``fitting``) and
says in how many slices its steps read it (``Window.slices``, ``transcript.spans``: each within
the budget, cut at a sentence end near the bound, else a whitespace: ``Window.slice_cut``).
FormMemories runs the fact extraction once per slice, then the reflection extraction once per
slice, each slice its own activity (its index an argument: the window's transcript never travels
through the workflow), merges the slices' results here, and goes on as for any window: one
dedup, one commit of every slice's memories, each citing the message, that moves the cursor past
it.

Why the workflow and not one activity calling the model once per slice: a slice is then an
ordinary LLM step, with the step's timeout, heartbeats and retries (ten slices of a slow local
model at 30–60 s a call would outlast any one step's timeout, and a retry would redo every slice),
and a slice that no retry can extract is passed over alone, visibly, by the existing path
(memory/degraded.py), while the others are formed. Code that is not a workflow (`mnemos degraded
reform`) reads every slice in turn through the same pipeline functions (``part=None``).

An extraction's answer full at its bound splits a window of several messages; a slice is one
message's, sized as a window is (the budget allows about 200 tokens per fact one answer carries).
The slices' facts together are kept to ``facts.max_per_formation`` (each slice's answer says it:
``max_facts``), taken from every slice in turn so that a dense head leaves the tail its share;
those left over are counted as dropped. From DENSE_MESSAGES on, a slice whose answer cannot carry
it is read again in halves (memory/pipeline/pieces.py), and the window of one message keeps up
to pieces.MAX_DENSE_FACTS, taken from the pieces in turn likewise (``merge_facts`` given that
bound: the workflow, where some slices' answers would still say the smaller one).

Pure functions of the activities' results: the workflow calls them, and so does the pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import zip_longest

from memory.ids import content_hash
from memory.pipeline.types import (
    ExtractedFactsResult,
    NewFact,
    NewReflection,
    ReflectionsResult,
)


def merge_facts(
    parts: Sequence[ExtractedFactsResult],
    max_facts: int | None = None,
    max_bytes: int | None = None,
) -> ExtractedFactsResult:
    """The slices' (or pieces') facts as one extraction's, in message order, numbered from 0: a
    fact said in two of them once, at most ``max_facts`` of them when given, else the least
    ``max_facts`` a part says (a part passed over is an empty part), and, with ``max_bytes``,
    no more than fit that many bytes of UTF-8 text together."""
    bound = max_facts
    if bound is None:
        bound = min((p.max_facts for p in parts if p.max_facts is not None), default=None)
    seen: set[str] = set()
    unique: list[list[NewFact]] = []
    for part in parts:
        mine = []
        for fact in part.facts:
            key = content_hash(fact.content)
            if key not in seen:
                seen.add(key)
                mine.append(fact)
        unique.append(mine)
    taken = _in_turn(unique, bound, max_bytes)
    kept = [
        fact.model_copy(update={"index": i})
        for i, fact in enumerate(f for n, mine in enumerate(unique) for f in mine[: taken[n]])
    ]
    found = sum(len(p.facts) for p in parts)
    return ExtractedFactsResult(
        facts=kept,
        llm=[call for p in parts for call in p.llm],
        dropped=sum(p.dropped for p in parts) + found - len(kept),
        max_facts=bound,
    )


def _in_turn(parts: list[list[NewFact]], bound: int | None, max_bytes: int | None) -> list[int]:
    """How many facts of each part are kept: one of each part in turn, until ``bound`` facts or
    until the next one's text would pass ``max_bytes`` (a prefix of each part either way)."""
    if bound is None and max_bytes is None:
        return [len(p) for p in parts]
    taken = [0] * len(parts)
    left = sum(map(len, parts)) if bound is None else bound
    room = max_bytes
    for row in zip_longest(*parts):
        for n, fact in enumerate(row):
            if fact is None or left <= 0:
                continue
            if room is not None:
                size = len(fact.content.encode())
                if size > room:
                    left = 0  # full: none after it either, so each part keeps a prefix
                    continue
                room -= size
            taken[n] += 1
            left -= 1
    return taken


def merge_reflections(parts: Sequence[ReflectionsResult]) -> ReflectionsResult:
    """The slices' reflections as one extraction's: each text once per scope, in slice order."""
    seen: set[tuple[str, str]] = set()
    kept: list[NewReflection] = []
    for part in parts:
        for r in part.reflections:
            key = (r.scope, content_hash(r.content))
            if key not in seen:
                seen.add(key)
                kept.append(r)
    return ReflectionsResult(reflections=kept, llm=[call for p in parts for call in p.llm])
