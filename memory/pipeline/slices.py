"""A message longer than the formation budget, read in slices: never cut, never skipped.

``load_window`` leaves such a message alone in its window (memory/transcript.py ``fitting``) and
says in how many slices its steps read it (``Window.slices``, ``transcript.spans``: each within
the budget, cut at a whitespace near the bound). FormMemories runs the fact extraction once per
slice, then the reflection extraction once per slice, each slice its own activity (its index an
argument: the window's transcript never travels through the workflow), merges the slices' results
here, and goes on as for any window: one dedup, one commit of every slice's memories, each citing
the message, that moves the cursor past it.

Why the workflow and not one activity calling the model once per slice: a slice is then an
ordinary LLM step, with the step's timeout, heartbeats and retries (ten slices of a slow local
model at 30–60 s a call would outlast any one step's timeout, and a retry would redo every slice),
and a slice that no retry can extract is passed over alone, visibly, by the existing path
(memory/degraded.py), while the others are formed. Code that is not a workflow (`mnemos degraded
reform`) reads every slice in turn through the same pipeline functions (``part=None``).

An extraction's answer full at its bound (or overflowing it: ``overflowed``) splits a window of
several messages. A single message, or one slice of it, dense with what is said (45 short
sentences each a fact, a pasted list of 60 contacts) is read again in halves: each its own
activity (the slice's index and the halves taken, ``transcript.piece``), halved again while its
answer overflows, down to ``transcript.MIN_SLICE_CHARS`` (about a sentence, cut at a sentence end
or a whitespace near the middle). Only a piece of that size that still overflows is passed over,
visibly, as a slice no retry can extract is; a model's answer that merely fills its bound there is
kept. Every piece's memories go in the window's commit, as every slice's do.

A dense message may so say more facts than one formation carries: ``facts.max_per_formation``,
the bound of one dedup decision's answer (40 items) and of the fact ids `mnemos degraded reform`
looks for a formation's unmerged copies under (memory/degraded.py ``unmerged_copies``). They are
not cut to it (runs before DENSE_MESSAGES kept that many, one of each slice in turn, and dropped
the rest unseen): they are committed in ``passes`` of at most that many, each its own formation
(``pass_id``: its own fact ids, decided against the passes committed before it, which the
candidate search finds in the store), the cursor left where it is (the commit's ``keep_cursor``,
as a re-form's); the last pass, under the window's own formation id, holds the reflections and
moves the cursor past the message. A pass is exactly once as any formation: a run that fails
between two finds the earlier passes committed. Why not one bigger formation: its decision answer
and its re-form's lookups are bounded; why not count the rest as passed over: a re-form of the
message would extract and cap the same facts again, never reaching the rest. The pipeline's
reading of a whole message (`mnemos degraded reform`, one commit per range it re-forms) keeps the
old cap, counting those beyond it as dropped.

Pure functions of the activities' results: the workflow calls them, and so does the pipeline.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from itertools import pairwise, zip_longest

from pydantic import ValidationError

from memory.errors import WindowTooLargeError
from memory.ids import content_hash
from memory.pipeline.types import (
    ExtractedFactsResult,
    NewFact,
    NewReflection,
    ReflectionsResult,
)


def overflowed(err: BaseException) -> bool:
    """Whether an answer failed its schema for holding more items than a list's bound (the
    offline provider answers so, and a model not held to the schema may): its input is too
    large for one answer, not misread."""
    cause = err.__cause__ or err.__context__
    return isinstance(cause, ValidationError) and any(
        e["type"] == "too_long" and len(e["loc"]) == 1 for e in cause.errors()
    )


def pass_id(formation_id: str, n: int) -> str:
    """The formation id of pass ``n`` (from 0) of a window committed in several, before its last
    (which has the window's own id)."""
    return f"{formation_id}:pass:{n + 1}"


def passes(facts: Sequence[NewFact], bound: int | None) -> list[list[NewFact]]:
    """The facts in consecutive passes of at most ``bound`` (None: one), as even as they come,
    each numbered from 0: one pass for as many as one formation carries."""
    count = 1 if bound is None or not facts else -(-len(facts) // bound)
    cuts = [len(facts) * n // count for n in range(count + 1)]
    return [
        [f.model_copy(update={"index": i}) for i, f in enumerate(facts[a:b])]
        for a, b in pairwise(cuts)
    ]


def merge_facts(
    parts: Sequence[ExtractedFactsResult], *, keep_all: bool = False
) -> ExtractedFactsResult:
    """The slices' facts as one extraction's, in message order, numbered from 0: a fact said in
    two slices once, at most ``max_facts`` of them unless ``keep_all`` (then committed in
    ``passes``; a slice passed over is an empty part)."""
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
    taken = _in_turn(unique, None if keep_all else bound)
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


def _in_turn(parts: list[list[NewFact]], bound: int | None) -> list[int]:
    """How many facts of each part are kept: one of each part in turn, until ``bound``."""
    if bound is None:
        return [len(p) for p in parts]
    taken = [0] * len(parts)
    left = bound
    for row in zip_longest(*parts):
        for n, fact in enumerate(row):
            if fact is not None and left > 0:
                taken[n] += 1
                left -= 1
    return taken


async def read_halving[T](
    read: Callable[[int, tuple[int, ...]], Awaitable[T]],
    halvable: Callable[[int, tuple[int, ...]], bool],
    part: int,
    halves: tuple[int, ...] = (),
) -> list[T]:
    """A slice's results: its own, or its halves' in order when its answer overflowed (those
    of a piece too short to halve raise)."""
    try:
        return [await read(part, halves)]
    except WindowTooLargeError:
        if not halvable(part, halves):
            raise
    return [leaf for h in (0, 1) for leaf in await read_halving(read, halvable, part, (*halves, h))]


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
