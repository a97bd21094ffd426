"""Stored messages as the prompts show them: who spoke, in which role, when; and how many of them
fit one formation's budget (``formation.max_tokens_per_run``).

A message longer than the budget is alone in its window (``fitting``) and read in consecutive
slices, each within the budget (``spans``): one model call per slice, every slice's memories
committed together (memory/pipeline/slices.py). Slices are cut at a sentence end when they can
(``SENTENCE_CUT``): a sentence cut in two is read as two, and a model (the offline rules most)
makes a wrong memory of each half, of no one's or in the wrong scope (r249: "Rex and he is 4
years old." became the agent's, which every user reads). The rule is the window's
(``Window.slice_cut``): one planned under the older whitespace cut (``WHITESPACE_CUT``, a payload
without the field) goes on forming its remaining parts after a deploy, and cut another way its
parts would skip or repeat text at a boundary, or be another number. ``shown`` still cuts what a
prompt shows at the budget, a safety net for a window loaded without its slices (one of an older
run)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory.models import StoredMessage
from memory.prompts.common import PromptMessage, one_line
from memory.speakers import said_by

GUEST = "guest"
# What a slice shows where the message goes on before or after it: between two sentences, and
# within one (a slice without a sentence end near its bound). The second says the words next to
# it are no whole sentence: a reader makes no memory of them (memory/llm/heuristic.py does not).
CUT = "[…]"
CUT_MID = "[… mid-sentence]"
# How a window's long message is cut into slices (``spans``): at the last whitespace of a slice's
# last quarter (windows planned before the sentence cut: their payloads do not say), or at its
# last sentence end there, else its last whitespace (``cut_points``). ``CUT_RULE`` is what a
# window planned now takes (memory/pipeline/window.py); an unknown newer rule reads as the
# newest this build knows.
WHITESPACE_CUT = 0
SENTENCE_CUT = 1
CUT_RULE = SENTENCE_CUT


def speaker(message: StoredMessage) -> str:
    """The speaker's display name, on one line. A user message carries the id of the agent it was
    recorded for, never its speaker's: a guest (no user id, no name) is shown as one, not as the
    agent, whose memory would otherwise say the agent said it."""
    name = one_line(message.name or "")
    if message.role == "user":
        return name or message.user_id or GUEST
    if (user := said_by(message)) is not None:  # a known person in another role: theirs
        return name or user
    return name or message.agent_id or message.role


_MARKER = re.compile(r"\s*(?:\[truncated: \d+ more characters\]|\[…(?: mid-sentence)?\])")
_SPACE = re.compile(r"\s")
# Where a sentence (or a line, an item of a list) ends: a slice, and a piece's half (memory/
# pipeline/pieces.py ``halve``), is cut there when it can.
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s|\n")
# Where a sentence surely ends, for a slice's cut and for what its markers say (r251): after
# ".!?", at a blank line, or before a list's item. Not at ";" or ":", where the offline rules read
# on ("Rex; he is 4" cut there made "He is 4 years old." the agent's), nor at any line break
# (text wrapped at a width has one in most sentences). A piece's halving keeps _SENTENCE_END:
# the halves of a run in flight must stay the text they were.
_SURE_END = re.compile(r"(?<=[.!?])\s|\n(?=[ \t]*(?:\n|[-*•]\s|\d{1,3}[.)]\s))")


def shown(content: str, max_chars: int | None) -> str:
    """The content as a prompt shows it: cut at ``max_chars`` with a marker saying so."""
    if max_chars is None or len(content) <= max_chars:
        return content
    return f"{content[:max_chars]} [truncated: {len(content) - max_chars} more characters]"


def as_said(text: str) -> str:
    """An extracted item's text on one line, without the cut markers of ``shown`` and ``sliced``:
    the prompt said them, nobody in the conversation did (a model copies them with the words they
    follow)."""
    return " ".join(_MARKER.sub(" ", text).split())


def cut_points(content: str, lo: int, hi: int, *, sure: bool = False) -> list[int]:
    """Where text may be cut within [lo, hi): the whitespace of its sentence ends when it has
    one (a line break, ";" and ":" end one too; with ``sure``, only ``_SURE_END``), else any
    whitespace (a word is not split); in order. A slice's end (``spans``, sure) and a piece's
    halving (pipeline/pieces.py ``halve``)."""
    ends = _SURE_END if sure else _SENTENCE_END
    found = [m.start() for m in ends.finditer(content, lo, hi)]
    return found or [m.start() for m in _SPACE.finditer(content, lo, hi)]


def spans(content: str, max_chars: int, *, rule: int) -> list[tuple[int, int]]:
    """The consecutive slices (start, end) a message is read in, each at most ``max_chars`` long:
    cut in a slice's last quarter, at its last sentence end (``SENTENCE_CUT``; ``cut_points``)
    or its last whitespace (``WHITESPACE_CUT``, the ``rule`` of windows planned before it), else
    at the bound; the whitespace between two slices is in neither. One span for a message
    within the bound."""
    out: list[tuple[int, int]] = []
    start, size = 0, len(content)
    while start < size:
        end = min(start + max_chars, size)
        if end < size:
            near = max(start + max_chars - max_chars // 4, start + 1)
            # The whitespace at ``end`` (just past the slice) ends it as well as one inside it.
            if rule >= SENTENCE_CUT:
                end = max(cut_points(content, near, end + 1, sure=True), default=end)
                while end > start + 1 and content[end - 1].isspace():
                    end -= 1  # a cut inside a run of whitespace: the run in neither slice
            else:
                end = max((m.start() for m in _SPACE.finditer(content, near, end + 1)), default=end)
        out.append((start, end))
        start = end
        while start < size and content[start].isspace():
            start += 1
    return out or [(0, 0)]


def slice_count(messages: Sequence[StoredMessage], max_chars: int, *, rule: int) -> int:
    """How many slices a window's messages are read in: those of its message when it holds one
    longer than ``max_chars`` alone (as ``fitting`` leaves it), else 1 (all read at once)."""
    if len(messages) != 1 or len(messages[0].content) <= max_chars:
        return 1
    return len(spans(messages[0].content, max_chars, rule=rule))


def sliced(content: str, max_chars: int, part: int, *, rule: int) -> str:
    """Slice ``part`` (from 0) of the content, marked where the message goes on (``marked``);
    empty for a part beyond its last."""
    cuts = spans(content, max_chars, rule=rule)
    if part >= len(cuts):
        return ""
    return marked(content, *cuts[part])


def marked(content: str, start: int, end: int) -> str:
    """content[start:end], a part of a message, as its prompt shows it: ``CUT`` where the
    message goes on before or after it across a sentence end, ``CUT_MID`` where it goes on
    within a sentence. The one place the markers are written: ``as_said`` strips them."""
    head = f"{_marker(content, start)} " if content[:start].strip() else ""
    tail = f" {_marker(content, end)}" if content[end:].strip() else ""
    return f"{head}{content[start:end]}{tail}"


def _marker(content: str, at: int) -> str:
    """The marker of a part's edge at ``at``: whether a sentence surely ends (``_SURE_END``) in
    the whitespace between the part and its neighbour, the whole run around ``at`` (a part may
    end inside it), so that both edges of one cut say the same (none there: a word was split at
    the bound, or the cut is within a sentence)."""
    lo, hi = at, at
    while lo > 0 and content[lo - 1].isspace():
        lo -= 1
    while hi < len(content) and content[hi].isspace():
        hi += 1
    return CUT if _SURE_END.search(content, lo, hi) else CUT_MID


def mid_sentence(text: str) -> tuple[bool, str, bool]:
    """(whether it begins within a sentence, the text without the markers at its ends, whether
    it ends within one), of a text as a prompt shows it: a slice or piece marked ``CUT_MID``,
    or a message ``shown`` truncated (at the budget, where no sentence need end)."""
    begins = text.startswith(f"{CUT_MID} ")
    body = text.removeprefix(f"{CUT_MID} ").removeprefix(f"{CUT} ")
    ends = body.endswith(f" {CUT_MID}")
    body = body.removesuffix(f" {CUT_MID}").removesuffix(f" {CUT}")
    if (m := _TRUNCATED.search(body)) is not None:
        body = body[: m.start()]
        ends = not _SURE_END.search(body[-1:] + " ")  # cut where a sentence ends: whole
    return begins, body, ends


_TRUNCATED = re.compile(r" \[truncated: \d+ more characters\]$")


def prompt_messages(
    messages: Sequence[StoredMessage],
    max_chars: int | None = None,
    part: int | None = None,
    *,
    rule: int | None = None,
) -> list[PromptMessage]:
    """The speaker id is a user message's user_id: what a user-scope memory is attributed to.
    ``part``: the slice of a window's one oversized message to show (``slice_count``), cut by
    the window's ``rule`` (Window.slice_cut), which a slice must say."""
    if part is not None and max_chars is not None and rule is None:
        raise ValueError("a slice is cut by its window's rule: say which")
    return [
        PromptMessage(
            seq=m.seq,
            role=m.role,
            name=speaker(m),
            content=shown(m.content, max_chars)
            if part is None or max_chars is None
            else sliced(m.content, max_chars, part, rule=WHITESPACE_CUT if rule is None else rule),
            created_at=m.created_at,
            user_id=said_by(m),
        )
        for m in messages
    ]


def fitting(messages: Sequence[StoredMessage], max_chars: int) -> int:
    """How many of ``messages`` (at least one) fit ``max_chars`` of content, each counted as its
    prompt shows it (truncated). A message longer than ``max_chars`` is always alone: read in
    slices (``slice_count``)."""
    used = 0
    for n, m in enumerate(messages):
        used += min(len(m.content), max_chars)
        if used > max_chars and n > 0:
            return n
    return len(messages)
