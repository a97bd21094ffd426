"""The order a window's decisions apply in: a decision about a fact said earlier in the same
window goes to the fact that holds it, and several changes of one stored fact apply as they were
said (dedup.decide gives its decisions in that order; the commit's fact ops follow it)."""

from __future__ import annotations

from memory import ids
from memory.pipeline.predecide import REFUSED
from memory.pipeline.types import Decision, Window


def through_window(window: Window, decisions: list[Decision]) -> list[Decision]:
    """Decisions about an earlier new fact of the window (facts._said_earlier), made to the fact
    that holds it once the commit applies them in order: that fact's own add, or the stored fact
    its decision changed or found it to be (an UPDATE or NONE of it). One that holds nothing
    (a NONE naming no fact) leaves the later fact to be ADDed, its change refused."""
    index = {ids.fact_id(window.formation_id, d.new_index): d.new_index for d in decisions}
    holder: dict[int, tuple[str, int] | None] = {}
    out: list[Decision] = []
    for d in sorted(decisions, key=lambda d: d.new_index):
        earlier = index.get(d.existing_id or "")
        if earlier is not None and d.event != "ADD":
            held = holder.get(earlier)
            if held is None:
                d = Decision(
                    new_index=d.new_index,
                    event="ADD",
                    reasoning=f"{REFUSED} {d.event}: the earlier fact it names was not kept",
                )
            else:
                d = d.model_copy(update={"existing_id": held[0], "expected_version": held[1]})
        if d.event in ("ADD", "DELETE"):
            holder[d.new_index] = (ids.fact_id(window.formation_id, d.new_index), 1)
        elif d.existing_id is not None and d.expected_version is not None:
            holder[d.new_index] = (d.existing_id, d.expected_version)
        out.append(d)
    return out


def in_message_order(decisions: list[Decision]) -> list[Decision]:
    """Several new facts may change one existing fact (a correction of a correction): they apply
    in the order the facts were said, each a version of that fact, so the later statement wins and
    the history keeps the others. Only the last of them may retire it (DELETE); an earlier DELETE
    becomes an UPDATE, the version it stated kept in the history."""
    last: dict[str, int] = {}
    for d in decisions:
        if d.event in ("UPDATE", "DELETE") and d.existing_id is not None:
            last[d.existing_id] = d.new_index
    return [
        d.model_copy(update={"event": "UPDATE"})
        if d.event == "DELETE" and d.existing_id is not None and last[d.existing_id] != d.new_index
        else d
        for d in decisions
    ]
