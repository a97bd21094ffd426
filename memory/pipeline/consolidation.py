"""Step 9: merge a scope's buffered reflections into its word-limited, versioned blob.

The model answers sections of bounded items (memory.prompts.consolidate); mnemos writes the blob
from them, with its ``VERSION: n+1`` line. A draft is checked before anything is stored: at least
one item, within the word limit (plus a small tolerance; a character of a script written without
spaces counts as a word, memory/word_count.py), and no item repeating the prompt's instructions
(memory/pipeline/echoes.py). The store then replaces the blob and marks exactly the drafted
reflections absorbed in one compare-and-set, so a reflection is absorbed once or stays buffered.
A consolidation's draft merges the buffer's oldest batch (settings.reflections.batch) and says
whether more is buffered; the workflow then drafts again. Batches are cut in the order formed
(the store's, stable while a consolidation drafts them in turns); within a draft the model reads
the reflections in the order they were said (models.in_said_order), and those said before all
the blob holds (its ``said_from``) before the blob (models.said_before).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory.deps import Deps
from memory.errors import InvalidModelOutputError
from memory.ids import normalize_text, text_hash
from memory.llm import choose_model
from memory.llm.base import FIRST, LLMRequest, Retry
from memory.lookup import require_agent
from memory.models import SET_ASIDE, Reflection, ScopeKey, said_before
from memory.pipeline.echoes import echoes_instructions
from memory.pipeline.types import (
    BufferedReflection,
    ConsolidationDraft,
    ConsolidationRequest,
    ConsolidationResult,
)
from memory.pipeline.usage import llm_call, words
from memory.prompts.consolidate import (
    INSTRUCTIONS,
    VERSION_LINE,
    ConsolidatedSections,
    ConsolidateInput,
    blob_items,
    blob_text,
)

__all__ = [
    "VERSION_LINE",
    "apply",
    "buffered",
    "buffered_batch",
    "checked_blob",
    "draft",
    "set_aside",
]  # VERSION_LINE: read by management


def checked_blob(
    answer: ConsolidatedSections,
    *,
    next_version: int,
    word_limit: int,
    tolerance: float,
    merged: Sequence[str] | None = None,
) -> str:
    """The blob written from the model's sections, or an error a retry can fix. ``merged``: what
    the model was given to merge (the blob's items, the reflections), against which a draft
    repeating the prompt's instructions is told from one grounded in it; None: not checked."""
    body = blob_text(answer, next_version)
    items = [line[2:] for line in body.splitlines() if line.startswith("- ")]
    if not items:
        raise InvalidModelOutputError("consolidation returned no items")
    limit = int(word_limit * (1 + tolerance))
    if words(body) > limit:
        raise InvalidModelOutputError(
            f"consolidated blob has {words(body)} words, over the limit of {limit}"
        )
    if merged is not None:
        _refuse_echoes(items, merged)
    return body


def _refuse_echoes(items: list[str], merged: Sequence[str]) -> None:
    """Stored, an echo would stand in every later prompt as the memory, and the reflections it
    replaced would be marked absorbed: lost. What the draft adds to what it merged (its items
    but the copies) is judged as one text: a memory item paraphrased in the instructions' common
    words ("Alice prefers short answers") is grounded by the names and things beside it, while
    an answer of the prompt's rules is made of nothing else."""
    copied = {normalize_text(text) for text in merged}
    added = [item for item in items if normalize_text(item) not in copied]
    if added and echoes_instructions(" ".join(added), False, INSTRUCTIONS, merged):
        raise InvalidModelOutputError(
            "consolidation repeats the prompt's instructions: write only what the memory and "
            "the new reflections say"
        )


async def draft(deps: Deps, req: ConsolidationRequest, retry: Retry = FIRST) -> ConsolidationDraft:
    key = req.key
    cfg = deps.settings.reflections
    word_limit = cfg.word_limit(key.scope)
    blob = await deps.store.get_consolidated(key)
    base_version = blob.version if blob else 0
    buffered, more = await _to_draft(deps, req)
    due = req.force or req.only_ids is not None or len(buffered) >= cfg.threshold(key.scope)
    if not req.blob_only and (not buffered or not due):
        return ConsolidationDraft(key=key, base_version=base_version, word_limit=word_limit)
    agent = await require_agent(deps.store, key.agent_id)
    # The batch is the buffer's oldest formed (its order in the store); the model reads it in the
    # order it was said, so that "newer information wins" means the latest said, whenever formed:
    # what was said before all the blob holds (a conversation recorded late) comes before the
    # blob, which it cannot override.
    earlier, later = said_before(buffered, blob.said_from if blob else None)
    request = LLMRequest.of(
        ConsolidateInput(
            agent=agent,
            scope=key.scope,
            current_content=blob.content if blob else "",
            current_version=base_version,
            reflections=[r.content for r in later],
            word_limit=word_limit,
            earlier=[r.content for r in earlier],
        ),
        model=choose_model(deps.settings, deps.llm.name, "consolidation", agent.tier),
        temperature=deps.settings.models.temperature,
        retry=retry,
    )
    result = await deps.llm.generate_structured(request, ConsolidatedSections)
    if req.blob_only:  # asked only whether the provider refuses it: any answer will do
        return ConsolidationDraft(
            key=key, base_version=base_version, word_limit=word_limit,
            llm=[llm_call(request, result.usage)],
        )  # fmt: skip
    content = checked_blob(
        result.value,
        next_version=base_version + 1,
        word_limit=word_limit,
        tolerance=cfg.word_limit_tolerance,
        merged=[
            *(r.content for r in earlier),
            *blob_items(blob.content if blob else ""),
            *(r.content for r in later),
        ],
    )
    # The earliest said of all it holds then: what it absorbs as earlier moves it back, so that
    # "earlier" stays true of every item (a conversation said between two it holds is news, as
    # the blob does not know when each item was said). A blob that does not know where it
    # begins (stored before it was kept, imported without it, rewritten by an older process)
    # never learns it: it holds things said at any time before.
    said = [r.said_or_formed for r in buffered]
    if blob is None:
        said_from = min(said, default=None)
    else:
        said_from = None if blob.said_from is None else min([blob.said_from, *said])
    return ConsolidationDraft(
        key=key,
        base_version=base_version,
        content=content,
        word_limit=word_limit,
        absorbed_ids=[r.reflection_id for r in buffered],
        absorbed_hashes={r.reflection_id: text_hash(r.content) for r in buffered},
        llm=[llm_call(request, result.usage)],
        oldest_buffered_at=min((r.formed_at for r in buffered), default=None),
        more=more,
        said_from=said_from,
    )


async def _to_draft(deps: Deps, req: ConsolidationRequest) -> tuple[list[Reflection], bool]:
    """What the draft merges, oldest first, and whether more is buffered beyond it: the buffer's
    oldest batch (or the whole buffer, for a request not ``in_batches``), or the part of it a
    split asks for (``only_ids``: a part of what ``buffered`` read)."""
    if req.blob_only:
        return [], False
    if not req.in_batches:
        whole = await deps.store.unabsorbed_reflections(req.key)
        if req.only_ids is not None:
            wanted = set(req.only_ids)
            whole = [r for r in whole if r.reflection_id in wanted]
        return whole, False
    oldest, more = await _oldest_batch(deps, req.key, req.skip_ids)
    if req.only_ids is not None:
        wanted = set(req.only_ids)
        return [r for r in oldest if r.reflection_id in wanted], False
    return oldest, more


async def _oldest_batch(
    deps: Deps, key: ScopeKey, skip_ids: Sequence[str]
) -> tuple[list[Reflection], bool]:
    """The buffer's oldest batch but the reflections to skip, and whether more is buffered: a
    read of a batch's size, whatever the buffer's."""
    batch = deps.settings.reflections.batch(key.scope)
    skip = set(skip_ids)
    read = await deps.store.unabsorbed_reflections(key, limit=batch + len(skip) + 1)
    oldest = [r for r in read if r.reflection_id not in skip]
    return oldest[:batch], len(oldest) > batch


async def apply(deps: Deps, d: ConsolidationDraft, now: datetime) -> ConsolidationResult:
    """Store a validated draft. ConflictError when the blob moved on since the draft was made, or
    a reflection it absorbs was edited since (the blob holds its old text)."""
    assert d.content is not None
    blob = await deps.store.get_consolidated(d.key)
    # A draft of an older worker (or one an older workflow task passed on) carries none. One
    # that absorbed nothing keeps the blob's (the commit's compare-and-set says it is still the
    # drafted blob's); one that absorbed reflections may have absorbed one said before it, so
    # the blob then does not know where it begins.
    said_from = d.said_from
    if said_from is None and blob is not None and not d.absorbed_ids:
        said_from = blob.said_from
    if blob is not None and blob.version == d.base_version + 1 and blob.content == d.content:
        return ConsolidationResult(
            key=d.key, version=blob.version, absorbed=len(d.absorbed_ids)
        )  # a retry after success
    stored = await deps.store.commit_consolidation(
        d.key,
        expected_version=d.base_version,
        content=d.content,
        word_limit=d.word_limit,
        absorbed_ids=d.absorbed_ids,
        at=now,
        absorbed_hashes=d.absorbed_hashes or None,
        said_from=said_from,
    )
    return ConsolidationResult(key=d.key, version=stored.version, absorbed=len(d.absorbed_ids))


async def buffered(deps: Deps, key: ScopeKey) -> list[BufferedReflection]:
    """The scope's whole buffer, oldest first: what a consolidation of an older workflow splits
    when its draft of the whole stayed unusable."""
    return [_named(r) for r in await deps.store.unabsorbed_reflections(key)]


async def buffered_batch(deps: Deps, req: ConsolidationRequest) -> list[BufferedReflection]:
    """The batch a draft of ``req`` reads, oldest first: what a consolidation splits when that
    draft stayed unusable (a step result of a batch's size, whatever the buffer's)."""
    oldest, _ = await _oldest_batch(deps, req.key, req.skip_ids)
    return [_named(r) for r in oldest]


def _named(r: Reflection) -> BufferedReflection:
    return BufferedReflection(reflection_id=r.reflection_id, content_hash=text_hash(r.content))


async def set_aside(deps: Deps, key: ScopeKey, reflection: BufferedReflection) -> bool:
    """Take out of the buffer a reflection no draft could take (its text unchanged since). True
    as well when it already is, with that text: a retry whose first attempt's reply was lost."""
    rid, drafted = reflection.reflection_id, reflection.content_hash
    if await deps.store.set_aside_reflection(key, rid, content_hash=drafted):
        return True
    now = await deps.store.get_reflection(rid)
    return (
        now is not None
        and now.absorbed_into_version == SET_ASIDE
        and text_hash(now.content) == drafted
    )
