"""What a formation or consolidation run did, returned as its result (a formation's also kept short
in its memo for the UI). Here, apart from the workflows, so that whoever starts them can type the
handle without importing the workflow modules (which import the activities)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from memory.degraded import REASON_CHARS, DegradedStep
from memory.pipeline.predecide import by_rule, refused
from memory.pipeline.types import DEGRADED, CommitResult, Decision, LlmCall

# Of what runs did, the latest says these (a consolidated version is the scope's): the largest.
_LATEST = frozenset({"version"})


def added[M: BaseModel](done: M, then: M) -> M:
    """What two runs (a drain's, an end's rounds) did, as one summary: counts added, tallies
    added, lists joined (a name once); what is not counted (a version, a degraded reason) is the
    latest run's. Field by field, so a field added to a summary is counted too."""
    fields: dict[str, Any] = {}
    for name in type(done).model_fields:
        a, b = getattr(done, name), getattr(then, name)
        if name in _LATEST:
            fields[name] = max(a, b)
        elif isinstance(a, bool) or not isinstance(a, int | list | dict):
            fields[name] = b
        elif isinstance(a, int):
            fields[name] = a + b
        elif isinstance(a, list):
            fields[name] = a + [x for x in b if not isinstance(x, str) or x not in a]
        else:
            fields[name] = dict(Counter(a) + Counter(b))
    return type(done).model_validate(fields)


# The newest windows only: a memo, and a drain's totals (workflows/drain.py), are small. Every
# window is in the store (memory/degraded.py), where `mnemos degraded` lists them all.
DEGRADED_LISTED = 40


def calls_made(calls: Iterable[LlmCall]) -> int:
    """The LLM calls ``calls`` stand for: a drain's totals tally them (LlmCall.count)."""
    return sum(c.count for c in calls)


class FormationSummary(BaseModel):
    formations: int = 0
    messages_formed: int = 0
    facts_extracted: int = 0
    facts_added: int = 0
    facts_updated: int = 0
    facts_invalidated: int = 0
    facts_duplicate: int = 0
    reflections_added: int = 0
    consolidations_requested: list[str] = Field(default_factory=list)
    decisions: dict[str, int] = Field(default_factory=dict)
    llm_calls: list[LlmCall] = Field(
        default_factory=list,
        description="The LLM calls paid for, one entry each; a drain that continued as new "
        "tallies them per task, provider and model: their number is the sum of the counts",
    )
    embedding_calls: int = 0
    decisions_redone: int = Field(0, description="Stale decisions decided again")
    decisions_by_rule: int = Field(
        0, description="Dedup decisions that needed no model (memory/pipeline/predecide.py)"
    )
    decisions_by_model: int = Field(0, description="Dedup decisions the model made")
    decisions_refused: int = Field(
        0,
        description="Of the decisions by rule, the model's UPDATE, DELETE or NONE refused because "
        "it names no stored fact, the two facts say nothing in common, or the change names "
        "neither the stored fact's attribute nor its verb (the new fact was added)",
    )
    duration_ms: int = 0
    degraded: list[DegradedStep] = Field(default_factory=list)
    degraded_left_out: int = Field(
        0,
        description="Of a drain that continued as new, its earliest degraded steps left out of "
        "degraded, which keeps the newest 40 (all in the store: `mnemos degraded list`)",
    )
    splits: int = Field(0, description="Windows split because a step could not carry them")
    passed_over: int = Field(
        0,
        description="Single messages, or slices of one, formed without a step's memories (in "
        "degraded)",
    )
    sliced_messages: int = Field(
        0, description="Messages longer than the formation budget, each read in slices"
    )
    slices_read: int = Field(0, description="The slices those were read in, one extraction each")
    # Fields, not private attributes: `mnemos form` and the demo print the memo of the result a
    # client reads back, which carries fields only. A client of an older build reading a newer
    # result ignores them (pydantic's default, and the tolerant payload converter).
    dense_messages: int = Field(
        0,
        description="Messages stating more facts than one extraction answer carries, each read "
        "in pieces (a slice halved while its answer could not carry it)",
    )
    pieces_read: int = Field(
        0,
        description="The pieces those were read in, whose answers were kept (each answer set "
        "aside for its halves' was one extraction more)",
    )

    facts_over_bound: int = Field(
        0,
        description="Distinct facts extracted and not formed, past a window's bound: of a "
        "message read in slices or pieces, the facts or text one window of one message keeps "
        "(memory/pipeline/pieces.py MAX_DENSE_FACTS, MAX_DENSE_BYTES; facts.max_per_formation "
        "for the slices of runs before DENSE_MESSAGES); of a window's second looks at the "
        "messages its answer passed over, facts.max_per_formation",
    )

    @property
    def degraded_steps(self) -> int:
        """Every degraded step of the run or drain, those left out of ``degraded`` included."""
        return self.degraded_left_out + len(self.degraded)

    def read_in_pieces(self, pieces: int) -> None:
        self.dense_messages += 1
        self.pieces_read += pieces

    def add_degraded(self, after_seq: int, upto_seq: int, step: str, reason: str) -> None:
        self.degraded.append(
            DegradedStep(
                after_seq=after_seq, upto_seq=upto_seq, step=step, reason=reason[:REASON_CHARS]
            )
        )

    def add_commit(self, messages: int, c: CommitResult) -> None:
        self.formations += 1
        self.messages_formed += messages
        self.facts_added += c.facts_added
        self.facts_updated += c.facts_updated
        self.facts_invalidated += c.facts_invalidated
        self.facts_duplicate += c.facts_duplicate
        self.reflections_added += c.reflections_added
        self.embedding_calls += c.embedding_calls
        # A key once per run: the drain requests each once, when it ends.
        due = [k.key for k in c.due_for_consolidation]
        self.consolidations_requested += [k for k in due if k not in self.consolidations_requested]

    def add_decisions(self, decisions: list[Decision]) -> None:
        counts = Counter(self.decisions)
        counts.update(d.event for d in decisions)
        self.decisions = dict(counts)
        rule = sum(by_rule(d) for d in decisions)
        self.decisions_by_rule += rule
        self.decisions_refused += sum(refused(d) for d in decisions)
        # A fallback's decisions (degraded) were made by neither.
        self.decisions_by_model += (
            sum(not d.reasoning.startswith(DEGRADED) for d in decisions) - rule
        )

    def memo(self) -> dict[str, object]:
        tokens_in = sum(c.input_tokens for c in self.llm_calls)
        tokens_out = sum(c.output_tokens for c in self.llm_calls)
        return {
            "summary": (
                f"{self.formations} formation(s), {self.messages_formed} messages: "
                f"facts +{self.facts_added} ~{self.facts_updated} -{self.facts_invalidated}, "
                f"reflections +{self.reflections_added}, consolidations {len(self.consolidations_requested)}, "
                f"LLM calls {calls_made(self.llm_calls)} ({tokens_in} in / {tokens_out} out tokens)"
                + (f"; {self.splits} window(s) split" if self.splits else "")
                + (
                    f"; {self.sliced_messages} long message(s) read in {self.slices_read} slices"
                    if self.sliced_messages
                    else ""
                )
                + (
                    f"; {self.dense_messages} dense message(s) read in {self.pieces_read} pieces"
                    if self.dense_messages
                    else ""
                )
                + (
                    f"; {self.facts_over_bound} fact(s) dropped past a window's bound"
                    if self.facts_over_bound
                    else ""
                )
                + self._degraded_note()
            ),
            "formations": self.formations,
            "messages_formed": self.messages_formed,
            "splits": self.splits,
            "passed_over": self.passed_over,
            "facts_added": self.facts_added,
            "facts_updated": self.facts_updated,
            "facts_invalidated": self.facts_invalidated,
            "reflections_added": self.reflections_added,
            "decisions_by_rule": self.decisions_by_rule,
            "decisions_by_model": self.decisions_by_model,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
        } | self._exceptions_memo()

    def _degraded_note(self) -> str:
        if not self.degraded:
            return ""
        last = self.degraded[-1]
        over = f", {self.passed_over} message(s) passed over" if self.passed_over else ""
        return (
            f"; DEGRADED ({self.degraded_steps} step(s){over}), last {last.step}: "
            f"{last.reason[:200]}"
        )

    def _exceptions_memo(self) -> dict[str, object]:
        # Only what happened: a run with neither has the memo runs before these keys had.
        refused = {"decisions_refused": self.decisions_refused} if self.decisions_refused else {}
        if self.sliced_messages:
            refused |= {"sliced_messages": self.sliced_messages, "slices_read": self.slices_read}
        if self.dense_messages:
            refused |= {"dense_messages": self.dense_messages, "pieces_read": self.pieces_read}
        if self.facts_over_bound:
            refused |= {"facts_over_bound": self.facts_over_bound}
        # A long backlog could degrade window by window.
        recent = self.degraded[-DEGRADED_LISTED:]
        return refused | ({"degraded": [d.model_dump() for d in recent]} if recent else {})


class ConsolidationSummary(BaseModel):
    degraded: str | None = None  # why the draft's output stayed unusable (buffer kept)
    # Reflections no draft could take, taken out of the buffer (memory.models.SET_ASIDE).
    set_aside: list[str] = []
    consolidations: int = 0
    absorbed: int = 0
    version: int = 0
    llm_calls: list[LlmCall] = []


class SessionEndSummary(BaseModel):
    """What ending a session formed and consolidated (the EndSession workflow's result)."""

    formation: FormationSummary
    consolidation: ConsolidationSummary
