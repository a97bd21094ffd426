"""The order a window's decisions apply in: a decision about a fact said earlier in the same
window goes to the fact that holds it, several changes of one stored fact apply as they were
said, and a fact the window changed, then said again as it was, ends as said last (dedup.decide
gives its decisions in that order; the commit's fact ops follow it)."""

from __future__ import annotations

from collections.abc import Mapping

from memory import ids
from memory.llm.fact_overlap import another_value
from memory.pipeline.predecide import REFUSED, RULE
from memory.pipeline.types import Decision, NewFact, Window

# A NONE made an UPDATE by ``said_back``: the fact said again after the window changed it.
SAID_BACK = f"{RULE}: said again after this window changed it"


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


def said_back(
    window: Window,
    decisions: list[Decision],
    facts: list[NewFact],
    stored: Mapping[str, str],
) -> list[Decision]:
    """A fact the window changed, then stated again as it was stored ("my account number is now
    4415" … "no wait, it's 4412"): the later statement was judged a repeat (NONE) of the text the
    fact had before the window, which the earlier change replaced. It is the last word: an UPDATE
    back to its own text, with its own sources and time (``_takes_back`` says when). A DELETE it
    takes back becomes an UPDATE, its text kept in the history: only the last change may retire
    a fact (``in_message_order``). ``decisions`` in new fact order, as ``through_window`` leaves
    them; a NONE no decision of the window changed the fact of stays a NONE, and so does one
    that does not say the fact as it was stored (``stored``: the candidates' texts, fact id ->
    text): "Alice worked at Google for 5 years" after "works at Meta" mentions the old value, it
    does not take the change back."""
    said = {f.index: f.content for f in facts}
    named = {d.existing_id for d in decisions}
    latest: dict[str, int] = {}  # fact id -> where in ``out`` the window last changed it
    out: list[Decision] = []
    for d in decisions:
        changed = latest.get(d.existing_id or "") if d.event == "NONE" else None
        before = stored.get(d.existing_id or "")
        restates = before is not None and _says(said[d.new_index], before)
        if changed is not None and restates and _takes_back(window, out[changed], said, d, named):
            out[changed] = out[changed].model_copy(update={"event": "UPDATE"})
            update = {"event": "UPDATE", "final_text": said[d.new_index], "reasoning": SAID_BACK}
            d = d.model_copy(update=update)
        if d.event in ("UPDATE", "DELETE") and d.existing_id is not None:
            latest[d.existing_id] = len(out)
        out.append(d)
    return out


def _takes_back(
    window: Window, change: Decision, said: dict[int, str], repeat: Decision, named: set[str | None]
) -> bool:
    """Whether ``repeat`` (a NONE) takes back the window's earlier ``change`` of its fact: the
    changed text no longer says it (``another_value``, the rule a NONE stands by: "4412" is not
    in "… is now 4415"; a merge, "likes jazz and rock" before "likes jazz", still says it, and
    the repeat stays a NONE), and the change can be undone: an UPDATE, or a DELETE whose new
    fact no decision names (made an UPDATE, that fact would not exist)."""
    changed_to = change.final_text or said[change.new_index]
    if another_value(said[repeat.new_index], changed_to) is None:
        return False
    return (
        change.event == "UPDATE" or ids.fact_id(window.formation_id, change.new_index) not in named
    )


def _says(statement: str, text: str) -> bool:
    """Whether a statement says the text again: nothing in it the text lacks (``another_value``:
    no other number, name, tense or denial) and the other way round."""
    return another_value(statement, text) is None and another_value(text, statement) is None
