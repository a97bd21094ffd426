"""A dense message read in pieces: halved, recursively, until each answer carries its piece.

One extraction answer carries at most ``MAX_ITEMS`` facts (the schema's bound). A window of
several messages whose answer cannot carry it is split, down to one message (docs/backlog.md);
a message longer than the formation budget is read in slices (memory/pipeline/slices.py). What
was left: one message, or one slice, stating more facts than one answer carries. Its answer
filled its bound (the rest were lost) or overflowed it (every fact was lost: the message was
passed over). Such a piece is now read again in two halves, each its own extraction, and so on.

A piece is named by its slice (``part``, transcript.spans) and the halves taken since
(``halves``: 0 the first, 1 the second), never by its text: the name travels through the workflow,
the text is read by the activity (the window's transcript never enters a workflow's history).

The first read of a slice (the whole message for one within the budget) is the extract_facts
activity every window has, scheduled as before DENSE_MESSAGES: an ordinary window's history
holds no new command, and a worker of the previous build still reads it. Only its halves are
extract_piece_facts activities. A piece is halved when its answer is ``full`` (the raw answer
reached its bound and at least three quarters of the bound were kept after the filters and the
within-answer dedup: a model that fills its bound with repeats does not halve anything, one that
lost an item or two to a filter does), or its extraction failed in a way a split can change
(activities/errors.py SPLITS_WINDOW: an overflow, a prompt too big for the model's context, an
input refused, an answer that stayed unusable) — and it ``can_halve``.

Why every path ends: a piece is halved only while it is at least twice ``MIN_HALF_CHARS`` long
(its halves are each that long: cut at a sentence end, else a whitespace, in its middle half,
transcript.cut_points, where ";", ":" and a line break end one too, unlike a slice's sure ends,
so that the halves of a run in flight stay the text they were; none there, it is not halved)
and at most ``MAX_DEPTH`` times. A piece that cannot be halved keeps its full answer, or is passed over visibly when it
fails (as a single message was). So a slice costs at most 2^(MAX_DEPTH+1) - 1 extractions even
against a model that always answers full.

The window keeps at most ``MAX_DENSE_FACTS`` distinct facts of at most ``MAX_DENSE_BYTES`` of
text, taken from the pieces in turn (``merged``), the rest counted as dropped, and apart as
``over_bound``: the run's summary, memo and a metric say how many facts said were left out (a
count in the dropped of a log line was seen by no one): every later step
carries them in one payload (find_similar_facts, decide_fact_changes, the commit, each well under
Temporal's 2 MB at this bound; a 100,000-character message of short facts would otherwise carry
thousands), and the decision asks the model in chunks of MAX_ITEMS (memory/pipeline/dedup.py),
at most eight, under a timeout the workflow scales by them. They go through the window's ONE
commit.

Pure: FormMemories imports it (through imports_passed_through) for ``full``, the bounds and the
names, the activities and `mnemos degraded reform` (``read_halving``, ``most_facts``) for the rest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from memory import transcript
from memory.errors import (
    InputRefusedError,
    InvalidModelOutputError,
    MalformedOutputError,
    UnusableOutputError,
    WindowTooLargeError,
)
from memory.ids import content_hash
from memory.pipeline.slices import merge_facts
from memory.pipeline.types import ExtractedFactsResult
from memory.prompts.common import MAX_ITEMS

type Halves = tuple[int, ...]
type Span = tuple[int, int]

# The shortest half a piece is cut into: about three sentences. A piece shorter than twice this
# is not halved: 40 distinct facts need more text than that.
MIN_HALF_CHARS = 300
# The most times a slice is halved (64 leaves: a budget's 32,000 characters in pieces of 500).
MAX_DEPTH = 6
# The most distinct facts a window of one message keeps, however many pieces it is read in, and
# the most bytes of UTF-8 text they hold together: every later step carries them, and each of
# their similar stored facts, in one payload (the commit's is about 8 times their text). 320
# facts of 400 ASCII characters fit both; facts of accented, CJK or emoji text fit fewer, so
# that no payload nears Temporal's 2 MB (helper 81 measured 2.1–3.9 MB at 320 such facts).
MAX_DENSE_FACTS = 8 * MAX_ITEMS
MAX_DENSE_BYTES = 128 * 1024
# The errors a halving can help with (activities/errors.py SPLITS_WINDOW, in the domain's terms).
SPLITS = (
    InputRefusedError,
    InvalidModelOutputError,
    MalformedOutputError,
    UnusableOutputError,
    WindowTooLargeError,
)


def halve(content: str, start: int, end: int) -> tuple[Span, Span] | None:
    """The span in two, cut at the sentence end nearest its middle, else the whitespace nearest
    it, within its middle half (the whitespace between the halves in neither); None when it has
    no such cut or a half would be shorter than MIN_HALF_CHARS."""
    if end - start < 2 * MIN_HALF_CHARS:
        return None
    middle, lo, hi = (start + end) // 2, start + (end - start) // 4, end - (end - start) // 4
    near = transcript.cut_points(content, lo, hi)  # not ``sure``: as halves were always cut
    if not near:
        return None
    cut = min(near, key=lambda i: abs(i - middle))
    left_end, right_start = cut, cut
    while left_end > start and content[left_end - 1].isspace():
        left_end -= 1
    while right_start < end and content[right_start].isspace():
        right_start += 1
    if min(left_end - start, end - right_start) < MIN_HALF_CHARS:
        return None
    return (start, left_end), (right_start, end)


def span(content: str, max_chars: int, part: int, halves: Halves = (), *, rule: int) -> Span | None:
    """Where piece (``part``, ``halves``) is in the content, its slices cut by ``rule`` (the
    window's: Window.slice_cut); None for none such (beyond the last slice, deeper than
    MAX_DEPTH, or a half of a piece that is not halved: the budget changed since the workflow
    named it)."""
    cuts = transcript.spans(content, max_chars, rule=rule)
    if part >= len(cuts) or len(halves) > MAX_DEPTH:
        return None
    here: Span | None = cuts[part]
    for h in halves:
        two = halve(content, *here) if here else None
        here = two[h] if two and h in (0, 1) else None
    return here


def can_halve(content: str, max_chars: int, part: int, halves: Halves = (), *, rule: int) -> bool:
    """Whether the piece is read again in halves when its answer cannot carry it."""
    here = span(content, max_chars, part, halves, rule=rule)
    return len(halves) < MAX_DEPTH and here is not None and halve(content, *here) is not None


def text(content: str, max_chars: int, part: int, halves: Halves = (), *, rule: int) -> str:
    """The piece as its prompt shows it, marked ``[…]`` where the message goes on (as a slice
    is: transcript.sliced); empty for none such. The whole message for (0, ()) of one within
    the budget, unmarked: its prompt is the one a window of that message had."""
    here = span(content, max_chars, part, halves, rule=rule)
    if here is None:
        return ""
    return transcript.marked(content, *here)


def name(part: int | None, slices: int, halves: Halves = ()) -> str:
    """A piece as a degraded record's reason and the logs say it ("slice 2 of 3, half 1/2")."""
    where = f"slice {(part or 0) + 1} of {slices}" if slices > 1 else "the message"
    return where + "".join(f", half {h + 1}" for h in halves)


def full(raw: int, kept: int, bound: int = MAX_ITEMS) -> bool:
    """Whether a piece's answer may have been cut at its ``bound``: the model answered that many
    items and at least three quarters of them were kept (an answer of repeats, or of facts the
    message does not say, is not cut, and its halves would add nothing). Judged on the answer's
    schema bound, which the workflow knows without the settings: with ``facts.max_per_formation``
    below three quarters of it, a first read is never full (that deployment asked for fewer)."""
    return raw >= bound and 4 * kept >= 3 * bound


def most_facts(messages: int, max_per_formation: int) -> int:
    """The most new facts a window of ``messages`` holds: ``max_per_formation`` for several,
    MAX_DENSE_FACTS for one (read in pieces; older runs kept at most ``max_per_formation`` of
    it, whichever is larger). `mnemos degraded reform` looks for that many ids per formation."""
    return max(MAX_DENSE_FACTS, max_per_formation) if messages == 1 else max_per_formation


async def read_halving(
    read: Callable[[Halves], Awaitable[ExtractedFactsResult]],
    halvable: Callable[[Halves], bool],
    halves: Halves = (),
) -> list[ExtractedFactsResult]:
    """The answer of a piece, or its halves' in message order when it cannot be read whole (its
    answer is ``full``, or its read raised one of ``SPLITS``) and can be halved; a piece that
    cannot be halved keeps its full answer, or raises. The answers set aside for their halves'
    are kept out of the leaves, their model calls not: the first leaf carries them. For code
    that is not a workflow: FormMemories reads each piece as its own activity."""
    try:
        answer = await read(halves)
    except SPLITS:
        if not halvable(halves):
            raise
    else:
        if not (full(len(answer.facts) + answer.dropped, len(answer.facts)) and halvable(halves)):
            return [answer]
        leaves = await _both(read, halvable, halves)
        first = leaves[0]
        return [first.model_copy(update={"llm": [*answer.llm, *first.llm]}), *leaves[1:]]
    return await _both(read, halvable, halves)


async def _both(
    read: Callable[[Halves], Awaitable[ExtractedFactsResult]],
    halvable: Callable[[Halves], bool],
    halves: Halves,
) -> list[ExtractedFactsResult]:
    return [leaf for h in (0, 1) for leaf in await read_halving(read, halvable, (*halves, h))]


def merged(leaves: Sequence[ExtractedFactsResult]) -> ExtractedFactsResult:
    """The pieces' facts as the window keeps them: within MAX_DENSE_FACTS and MAX_DENSE_BYTES,
    taken from the pieces in turn (memory/pipeline/slices.py ``merge_facts``)."""
    return merge_facts(leaves, MAX_DENSE_FACTS, MAX_DENSE_BYTES)


def over_bound(leaves: Sequence[ExtractedFactsResult], kept: ExtractedFactsResult) -> int:
    """How many distinct facts of the ``leaves`` (a message's slices or pieces) the window's
    ``kept`` facts (``merged``, or ``merge_facts`` of the slices) leave out: extracted, then past
    a bound of facts or of text, and never formed. Not ``kept.dropped``, which also counts what
    the filters drop (a fact said in two pieces, one in a scope the window may not write): no
    loss, where this is one."""
    distinct = {content_hash(f.content) for leaf in leaves for f in leaf.facts}
    return max(0, len(distinct) - len(kept.facts))


def bound_reached(kept: ExtractedFactsResult) -> str:
    """Which bound left facts out of ``kept``: "facts" when it holds as many as its bound says
    (``max_facts``), else "text" (MAX_DENSE_BYTES): the metric's label, for whoever tunes them."""
    return "facts" if kept.max_facts is not None and len(kept.facts) >= kept.max_facts else "text"
