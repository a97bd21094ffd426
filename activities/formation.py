"""Formation activities: thin wrappers over memory.pipeline, one per step the Temporal UI shows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter
from structlog.stdlib import BoundLogger
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.errors import SPLITS_WINDOW, classified, not_halvable, with_halving
from activities.heartbeat import asking, heartbeating, step_seconds, this_attempt
from activities.paid import paying
from memory.degraded import DegradedStep, degraded_windows
from memory.deps import Deps
from memory.logging import get_logger
from memory.pipeline import commit, dedup, facts, pieces, reflections, window
from memory.pipeline.types import (
    CandidatesResult,
    CommitResult,
    Decision,
    DecisionsResult,
    ExtractedFactsResult,
    FormationRequest,
    NewFact,
    NewReflection,
    ReflectionsResult,
    Window,
)

# The SDK types an activity's arguments only when as many are given as it takes: the five
# commit_formation took before ``degraded`` (scheduled by older workflow code, and by this code
# for a window with nothing degraded) arrive as plain JSON values, typed here.
_COMMIT_ARGS = TypeAdapter(
    tuple[Window, list[NewFact], list[Decision], list[NewReflection], CandidatesResult | None]
)

# Those of the extraction steps scheduled without a slice (a window of one, older workflow code).
_REFLECT_ARGS = TypeAdapter(tuple[Window, list[str]])


# Read as the payload converter reads (runtime/payloads.py): a field added by a newer build is
# ignored, so a rolling deploy or a rollback does not fail every formation on the other build.
_WINDOW = TypeAdapter(Window)


def _window(w: Any) -> Window:
    return w if isinstance(w, Window) else _WINDOW.validate_python(w, extra="ignore")


def _log(w: Window | FormationRequest) -> BoundLogger:
    info = activity.info()
    return get_logger(
        agent_id=w.agent_id,
        session_id=w.session_id,
        workflow_id=info.workflow_id,
        activity=info.activity_type,
        attempt=info.attempt,
    )


class FormationActivities:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    @activity.defn(name="load_formation_window")
    async def load_window(self, req: FormationRequest) -> Window | None:
        with classified():
            w = await window.load_window(self.deps.store, self.deps.settings, req)
        _log(req).info("window loaded", found=w is not None, messages=w.message_count if w else 0)
        return w

    @activity.defn(name="extract_facts")
    async def extract_facts(self, w: Window, part: int | None = None) -> ExtractedFactsResult:
        """``part``: one slice of a window's oversized message (memory/pipeline/slices.py);
        scheduled without it (a window of one slice, older workflow code), every slice. One
        answer per slice, as older workflow code expects of it: the first read of every slice
        in FormMemories, whose halves (DENSE_MESSAGES) are extract_piece_facts activities. An
        error of a window of one message that a split could change says whether the slice can
        be halved (``with_halving``): the workflow asks no other activity before halving it."""
        w = _window(w)
        deterministic = self.deps.llm.deterministic
        with paying() as paid:
            try:
                with asking(paid, deterministic=deterministic):
                    out = await heartbeating(
                        facts.extract_facts(
                            self.deps,
                            w,
                            this_attempt(),
                            part,
                            halving=False,
                            step_seconds=step_seconds(),
                        )
                    )
            except ApplicationError as err:
                if w.message_count != 1 or err.type not in SPLITS_WINDOW:
                    raise
                with classified():
                    halvable = await facts.piece_halvable(self.deps, w, part or 0)
                raise with_halving(err, halvable) from err.__cause__
        _log(w).info("facts extracted", facts=len(out.facts), dropped=out.dropped, part=part)
        return paid.reported(out)

    @activity.defn(name="extract_piece_facts")
    async def extract_piece_facts(
        self, w: Window, part: int, halves: list[int]
    ) -> ExtractedFactsResult:
        """The facts of one half of a piece of a window's one message: slice ``part``, halved
        as ``halves`` says (memory/pipeline/pieces.py), scheduled by FormMemories (from
        DENSE_MESSAGES on) only for dense messages. PieceNotHalvable (NOT_HALVABLE) when the
        piece it halves is not halved, before any model call. Its answer, full or not, is
        returned (the workflow judges it, as a first read's); an error says whether the piece
        can be halved (``with_halving``): the workflow then reads its halves, each its own
        activity."""
        w = _window(w)
        piece = tuple(halves)
        deterministic = self.deps.llm.deterministic
        # From the start: a piece found not halvable after an attempt that paid still reports it.
        with paying() as paid:
            # One read of the window's state per attempt: the piece's read and both halving
            # checks judge the same messages (a forget between them cannot make them disagree).
            with classified():
                messages = await window.window_messages(self.deps, w)
            if not piece or not facts.halvable(self.deps, w, messages, part, piece[:-1]):
                raise not_halvable(pieces.name(part, w.slices, piece[:-1]))
            try:
                with asking(paid, deterministic=deterministic):
                    out = await heartbeating(
                        facts.read_piece(self.deps, w, messages, this_attempt(), part, piece)
                    )
            except ApplicationError as err:
                halvable = facts.halvable(self.deps, w, messages, part, piece)
                raise with_halving(err, halvable) from err.__cause__
        _log(w).info(
            "facts extracted", facts=len(out.facts), dropped=out.dropped, part=part, halves=halves
        )
        return paid.reported(out)

    @activity.defn(name="find_similar_facts")
    async def find_similar_facts(self, w: Window, new_facts: list[NewFact]) -> CandidatesResult:
        read_at = datetime.now(UTC)  # before the search: the commit re-checks from here
        with classified():
            found = await facts.find_candidates(self.deps, w, new_facts)
        return found.model_copy(update={"read_at": read_at})

    @activity.defn(name="decide_fact_changes")
    async def decide_fact_changes(
        self, w: Window, new_facts: list[NewFact], candidates: CandidatesResult
    ) -> DecisionsResult:
        deterministic = self.deps.llm.deterministic
        with paying() as paid, asking(paid, deterministic=deterministic):
            out = await heartbeating(
                dedup.decide(self.deps, w, new_facts, candidates, this_attempt())
            )
        _log(w).info(
            "fact changes decided",
            decisions=[d.event for d in out.decisions],
            embedding_calls=out.embedding_calls,
        )
        return paid.reported(out)

    @activity.defn(name="extract_reflections")
    async def extract_reflections(
        self, w: Window, new_facts: list[str], part: int | None = None
    ) -> ReflectionsResult:
        """``part``: as extract_facts'."""
        if not isinstance(w, Window):  # two arguments, untyped: _REFLECT_ARGS
            w, new_facts = _REFLECT_ARGS.validate_python((w, new_facts), extra="ignore")
        deterministic = self.deps.llm.deterministic
        with paying() as paid, asking(paid, deterministic=deterministic):
            out = await heartbeating(
                reflections.extract_reflections(self.deps, w, new_facts, this_attempt(), part)
            )
        return paid.reported(out)

    @activity.defn(name="add_facts_undecided")
    async def add_facts_undecided(
        self, w: Window, new_facts: list[NewFact], reason: str
    ) -> DecisionsResult:
        """The decide step's fallback (no LLM): every new fact added unmerged, flagged."""
        with classified():
            out = await dedup.undecided(self.deps, new_facts, reason)
        # info: the workflow logs the fallback as a warning, with the step and the reason
        _log(w).info("fact changes left undecided", facts=len(new_facts), reason=reason)
        return out

    @activity.defn(name="commit_formation")
    async def commit_formation(
        self,
        w: Window,
        new_facts: list[NewFact],
        decisions: list[Decision],
        new_reflections: list[NewReflection],
        candidates: CandidatesResult | None = None,
        degraded: list[DegradedStep] | None = None,
    ) -> CommitResult:
        """``degraded``: the window's steps that took their fallback or passed a message over
        (none from workflow code older than it), recorded in the transaction of the memories."""
        if not isinstance(w, Window):  # five (or four) arguments, untyped: _COMMIT_ARGS
            given: Any = (w, new_facts, decisions, new_reflections, candidates)
            w, new_facts, decisions, new_reflections, candidates = _COMMIT_ARGS.validate_python(
                given, extra="ignore"
            )
        now = datetime.now(UTC)
        # In the commit's transaction: a forget_user after it finds them (and erases or deletes
        # them with the user's messages); a retry finds the commit, and them, done.
        records = degraded_windows(w.agent_id, w.session_id, w.formation_id, degraded or (), now)
        with classified():
            out = await commit.commit(
                self.deps, w, new_facts, decisions, new_reflections, now, candidates,
                degraded=records,
            )  # fmt: skip
        _log(w).info(
            "formation committed",
            formation_id=w.formation_id,
            already_committed=out.already_committed,
            facts_added=out.facts_added,
            facts_updated=out.facts_updated,
            facts_invalidated=out.facts_invalidated,
            reflections_added=out.reflections_added,
            discarded_for_erasure=out.discarded_for_erasure,
            degraded=[d.step for d in degraded or ()],
        )
        return out
