"""Which unmerged copies a re-form's new decisions supersede, and the UPDATE of each that
converges it on the fact its new decision stored (the rule: memory/reform.py's docstring).

A copy is superseded through the formation commit's own path, an UPDATE checked against the
copy's version: its text is another valid fact's, so the store invalidates it in favour of that
one (memory/store/rules/formation.py), in the same transaction as the new decisions."""

from __future__ import annotations

from memory.deps import Deps
from memory.ids import content_hash
from memory.models import Fact
from memory.pipeline.embed_cache import embed_cached
from memory.pipeline.types import CandidatesResult, Decision, NewFact, Window

# The reasoning of the UPDATE that supersedes a copy (kept in its history when the store rewrites
# the copy rather than invalidating it).
SUPERSEDED = "superseded by re-form"


async def superseding(
    deps: Deps,
    w: Window,
    new: list[NewFact],
    decisions: list[Decision],
    found: CandidatesResult,
    flagged: set[str],
) -> dict[int, Decision]:
    """The UPDATEs superseding the copies (``flagged`` ids) these decisions cover, by new fact
    index. ``found``: the candidates before the copies were left out, which hold them with their
    similarity to each new fact."""
    by_index = {f.index: f for f in new}
    texts = {
        d.new_index: t
        for d in decisions
        if (t := _covering_text(d, by_index[d.new_index], decisions, found))
    }
    listed = {c.fact_id for hits in found.by_new_index.values() for c in hits}
    copies = {
        f.fact_id: f
        for f in await deps.store.get_facts(sorted(listed & flagged))
        if f.invalidated_at is None and f.version == 1  # as the fallback added it
    }
    # A text in a copy's very words: the store's duplicate rule already makes the two one fact.
    same = {content_hash(t) for t in texts.values()} & {f.hash for f in copies.values()}
    pairs = [
        (c.similarity, i, c.fact_id)
        for i, text in texts.items()
        if content_hash(text) not in same
        for c in found.by_new_index.get(i, [])
        if (copy := copies.get(c.fact_id)) is not None
        and copy.hash not in same
        and _drawn_alike(copy, by_index[i], w)
    ]
    out: dict[int, Decision] = {}
    covered: set[str] = set()
    # The closest pairs first, each new fact and each copy once: a new fact that merged two
    # statements supersedes one copy, and a copy the extraction missed is not taken by a
    # neighbour's new fact in its place.
    for _, i, fact_id in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
        if i in out or fact_id in covered:
            continue
        covered.add(fact_id)
        out[i] = Decision(
            new_index=i,
            event="UPDATE",
            existing_id=fact_id,
            expected_version=copies[fact_id].version,
            final_text=texts[i],
            reasoning=SUPERSEDED,
        )
    # The commit reads each stored text's vector from the cache: a NONE's fact may not be there.
    await embed_cached(deps.store, deps.embedder, [t for d in out.values() if (t := d.final_text)])
    return out


def _covering_text(
    d: Decision, fact: NewFact, decisions: list[Decision], found: CandidatesResult
) -> str | None:
    """The text a copy the decision covers converges on: what the decision stored, or for a NONE
    the content of the fact it repeats as judged, unless another decision of the part changes
    that fact (the copy would take a text no longer its)."""
    if d.event != "NONE":
        return d.final_text or fact.content
    if any(o.existing_id == d.existing_id and o.event in ("UPDATE", "DELETE") for o in decisions):
        return None
    judged = found.by_new_index.get(d.new_index, [])
    return next((c.content for c in judged if c.fact_id == d.existing_id), None)


def _drawn_alike(copy: Fact, fact: NewFact, w: Window) -> bool:
    """Whether the copy may be the new fact's earlier extraction: from one of its messages, in its
    scope and its owner's (a copy from another message is another statement)."""
    owner = w.user_id if fact.scope == "user" else None
    return (
        copy.scope == fact.scope
        and copy.user_id == owner
        and bool(set(copy.source_message_ids) & set(fact.source_message_ids))
    )
