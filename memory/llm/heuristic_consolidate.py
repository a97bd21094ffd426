"""The offline provider's consolidation: the blob's items and the new reflections, each once,
the oldest dropped first to fit the word limit, none cut (memory/llm/heuristic.py answers with
it). Oldest by position: the draft gives the reflections oldest said first (ConsolidateInput),
so a conversation recorded late is dropped before what was said after it, and those said before
what the blob holds (ConsolidateInput.earlier) before the blob's items."""

from __future__ import annotations

from memory.ids import normalize_text
from memory.prompts import ConsolidateInput
from memory.prompts.common import one_line
from memory.prompts.consolidate import (
    MAX_ITEM_CHARS,
    MAX_ITEMS_PER_SECTION,
    MAX_SECTIONS,
    ConsolidatedSection,
    ConsolidatedSections,
    blob_items,
    version_line,
)
from memory.word_count import first_words, word_spans, words


def consolidate(p: ConsolidateInput) -> ConsolidatedSections:
    """The earlier reflections, the blob's items, then the new reflections, each once at its
    newest place, the oldest dropped first to fit the word limit; one section with no title (a
    rule cannot name what it does not understand). Every line of the blob is an item (a person's edit or an import may be
    plain lines), kept whole: the word limit bounds the blob by dropping items, never by cutting
    one, but for a newest item over the whole limit alone."""
    items = [
        *(one_line(r) for r in p.earlier if r.strip()),
        *blob_items(p.current_content),
        *(one_line(r) for r in p.reflections if r.strip()),
    ]
    unique: dict[str, str] = {}  # keeps each item at its newest position: repeats are dropped last
    for item in items:
        unique.pop(normalize_text(item), None)
        unique[normalize_text(item)] = item
    budget = p.word_limit - words(version_line(p.next_version))
    kept = _within_budget(list(unique.values()), budget)
    # Within the answer's bounds too: untitled sections of at most 24 items each, which the blob
    # writes as one list (blob_text gathers a title's items); beyond 8 of them, the oldest go.
    while sum(len(pieces) for pieces in kept) > MAX_SECTIONS * MAX_ITEMS_PER_SECTION:
        kept.pop(0)
    flat = [piece for pieces in kept for piece in pieces]
    chunks = [
        flat[i : i + MAX_ITEMS_PER_SECTION] for i in range(0, len(flat), MAX_ITEMS_PER_SECTION)
    ]
    return ConsolidatedSections(
        sections=[ConsolidatedSection(title="", items=chunk) for chunk in chunks or [[]]]
    )


def _within_budget(items: list[str], budget: int) -> list[list[str]]:
    """The newest items, each as its pieces, whose bullets fit ``budget`` words, the oldest
    dropped first. A newest item over the budget alone is cut to it: something of the latest
    is kept rather than a blob refused as over its limit."""
    pieces = [_pieces(item) for item in items]
    costs = [sum(words(f"- {piece}") for piece in each) for each in pieces]
    total, first = sum(costs), 0
    while first < len(items) - 1 and total > budget:
        total -= costs[first]
        first += 1
    if first == len(items) - 1 and total > budget:
        cut = first_words(items[first], max(budget - len(pieces[first]), 1))
        return [_pieces(cut)]
    return pieces[first:]


def _pieces(item: str) -> list[str]:
    """An item as answer items: itself, or when longer than one may be (a person's long line; the
    model's and the rules' are within it), consecutive pieces cut between words, none lost."""
    pieces: list[str] = []
    start = end = 0
    for begin, stop in word_spans(item):
        if stop - start > MAX_ITEM_CHARS and end > start:
            pieces.append(item[start:end])
            start = begin
        while stop - start > MAX_ITEM_CHARS:  # one word longer than an item: cut within it
            pieces.append(item[start : start + MAX_ITEM_CHARS])
            start += MAX_ITEM_CHARS
        end = stop
    return [piece for piece in (*pieces, item[start:end]) if piece.strip()]
