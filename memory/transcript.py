"""Stored messages as the prompts show them: who spoke, in which role, when; and how many of them
fit one formation's budget (``formation.max_tokens_per_run``).

A message longer than the budget is alone in its window (``fitting``) and read in consecutive
slices, each within the budget (``spans``): one model call per slice, every slice's memories
committed together (memory/pipeline/slices.py). ``shown`` still cuts what a prompt shows at the
budget, a safety net for a window loaded without its slices (one of an older run)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory.models import StoredMessage
from memory.prompts.common import PromptMessage, one_line
from memory.speakers import said_by

GUEST = "guest"
# What a slice shows where the message goes on before or after it.
CUT = "[…]"


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


_MARKER = re.compile(r"\s*(?:\[truncated: \d+ more characters\]|\[…\])")
_SPACE = re.compile(r"\s")


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


def spans(content: str, max_chars: int) -> list[tuple[int, int]]:
    """The consecutive slices (start, end) a message is read in, each at most ``max_chars`` long:
    cut at the last whitespace of a slice's last quarter when it has one (a word is not split),
    else at the bound; the whitespace between two slices is in neither. One span for a message
    within the bound."""
    out: list[tuple[int, int]] = []
    start, size = 0, len(content)
    while start < size:
        end = min(start + max_chars, size)
        if end < size:
            near = start + max_chars - max_chars // 4
            # The whitespace at ``end`` (just past the slice) ends it as well as one inside it.
            cut = max(
                (m.start() for m in _SPACE.finditer(content, max(near, start + 1), end + 1)),
                default=end,
            )
            end = cut
        out.append((start, end))
        start = end
        while start < size and content[start].isspace():
            start += 1
    return out or [(0, 0)]


def slice_count(messages: Sequence[StoredMessage], max_chars: int) -> int:
    """How many slices a window's messages are read in: those of its message when it holds one
    longer than ``max_chars`` alone (as ``fitting`` leaves it), else 1 (all read at once)."""
    if len(messages) != 1 or len(messages[0].content) <= max_chars:
        return 1
    return len(spans(messages[0].content, max_chars))


def sliced(content: str, max_chars: int, part: int) -> str:
    """Slice ``part`` (from 0) of the content, marked ``[…]`` where the message goes on; empty
    for a part beyond its last."""
    cuts = spans(content, max_chars)
    if part >= len(cuts):
        return ""
    start, end = cuts[part]
    return marked(content[start:end], before=part > 0, after=part < len(cuts) - 1)


def marked(text: str, *, before: bool, after: bool) -> str:
    """A part of a message as its prompt shows it: ``[…]`` where the message goes on ``before``
    or ``after`` it. The one place the marker is written: ``as_said`` strips what it writes."""
    head = f"{CUT} " if before else ""
    tail = f" {CUT}" if after else ""
    return f"{head}{text}{tail}"


def prompt_messages(
    messages: Sequence[StoredMessage], max_chars: int | None = None, part: int | None = None
) -> list[PromptMessage]:
    """The speaker id is a user message's user_id: what a user-scope memory is attributed to.
    ``part``: the slice of a window's one oversized message to show (``slice_count``)."""
    return [
        PromptMessage(
            seq=m.seq,
            role=m.role,
            name=speaker(m),
            content=shown(m.content, max_chars)
            if part is None or max_chars is None
            else sliced(m.content, max_chars, part),
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
