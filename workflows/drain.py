"""What a FormMemories drain carries from window to window and from run to run (continue-as-new):
the size its windows are read at while a split drains, and what its earlier runs did. Pure
functions of their inputs, deterministic, so the workflow can call them anywhere."""

from __future__ import annotations

from typing import Any

from memory.pipeline.types import LlmCall, SplitChain, Window
from workflows.summary import DEGRADED_LISTED, FormationSummary, added


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
    run's (workflows.summary.added), bounded; a drain of one run, that run's own summary."""
    if earlier is None:
        return run
    # Read as the payload converter reads: a newer build's carry may hold fields this one lacks.
    done = FormationSummary.model_validate(earlier, extra="ignore")
    return bounded(added(done, run))


def carried(earlier: dict[str, object] | None, run: FormationSummary) -> dict[str, Any]:
    """What a run continuing as new carries to the next (FormationRequest.drained): the drain's
    totals so far, bounded whatever the drain's length, as Temporal refuses a payload over 2 MB."""
    return bounded(merged(earlier, run)).model_dump(mode="json")


def bounded(summary: FormationSummary) -> FormationSummary:
    """``summary`` of a size independent of the windows it counts: its LLM calls tallied (counts
    and token sums per task, provider and model) and its newest degraded steps, with the count of
    those left out. Every count and sum stays the same."""
    listed = summary.degraded[-DEGRADED_LISTED:]
    left_out = len(summary.degraded) - len(listed)
    return summary.model_copy(
        update={
            "llm_calls": tallied(summary.llm_calls),
            "degraded": listed,
            "degraded_left_out": summary.degraded_left_out + left_out,
        }
    )


def tallied(calls: list[LlmCall]) -> list[LlmCall]:
    """One LlmCall per task, provider and model of ``calls`` (in the order they first came),
    standing for all of them: their count and their tokens summed."""
    tally: dict[tuple[str, str, str], LlmCall] = {}
    for call in calls:
        key = (call.task, call.provider, call.model)
        seen = tally.get(key)
        tally[key] = call if seen is None else _plus(seen, call)
    return list(tally.values())


def _plus(a: LlmCall, b: LlmCall) -> LlmCall:
    return a.model_copy(
        update={
            "input_tokens": a.input_tokens + b.input_tokens,
            "output_tokens": a.output_tokens + b.output_tokens,
            "count": a.count + b.count,
        }
    )
