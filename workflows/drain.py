"""What a FormMemories drain carries from window to window and from run to run (continue-as-new):
the size its windows are read at while a split drains, and what its earlier runs did. Pure
functions of their inputs, deterministic, so the workflow can call them anywhere."""

from __future__ import annotations

from memory.pipeline.types import SplitChain, Window
from workflows.summary import FormationSummary, added


def after_split(chain: SplitChain | None, limit: int | None, window: Window) -> SplitChain:
    """The split in progress once ``window`` (read at ``limit``) is split: a part split again
    belongs to the split it came from, whose size before is the one to go back to."""
    return chain or SplitChain(before=limit, upto_seq=window.upto_seq)


def part_size(window: Window) -> int:
    """The size the rest of the drain reads after splitting ``window``: a dense backlog is split
    once, not window after window."""
    return max(1, window.message_count // 2)


def restores(chain: SplitChain, passed_over: bool) -> bool:
    """Whether the drain goes back to the size before the split, after a window formed (with a
    message or a slice of it ``passed_over`` or not): the split ended in a message passed over, and
    the message after it formed. Its failure was that message's, not its window's density; while
    message after message fails, each is tried alone once, not split down to again."""
    return chain.passed_over and not passed_over


def after_formed(chain: SplitChain | None, window: Window, passed_over: bool) -> SplitChain | None:
    """The split still draining after ``window`` formed, or None once the drain formed past the
    window that was split with no message of it passed over: that window was dense, and the
    smaller size stays."""
    if chain is None:
        return None
    if passed_over and window.message_count == 1:
        return chain.model_copy(update={"passed_over": True})
    if chain.passed_over or window.upto_seq < chain.upto_seq:
        return chain
    return None


def merged(earlier: dict[str, object] | None, run: FormationSummary) -> FormationSummary:
    """What the whole drain did: its earlier runs' summary (carried by continue-as-new) and this
    run's (workflows.summary.added)."""
    if earlier is None:
        return run
    return added(FormationSummary.model_validate(earlier), run)
