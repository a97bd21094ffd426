"""ConsolidateScope: the single consolidator of one scope key (agent, agent+user or agent+session).

Formations signal-with-start it under ``consolidate:{scope key}``, so consolidations of one key never
overlap, across every worker and session. Each pass drafts a blob from the buffered reflections
(validated before anything is stored) and applies it with a compare-and-set that also marks exactly
those reflections absorbed; if the blob moved meanwhile, it drafts again.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.consolidation import ConsolidationActivities
    from activities.errors import CONFLICT, UNUSABLE_OUTPUT
    from memory.pipeline.types import ConsolidationDraft, ConsolidationRequest
    from workflows import options
    from workflows.naming import CONSOLIDATE_WORKFLOW, DEGRADED_METRIC
    from workflows.summary import ConsolidationSummary

_CAS_ATTEMPTS = 5
# Histories recorded before the fallback fail the run where it takes it (workflow.patched).
DEGRADED_FALLBACK = "degraded-fallback"


@workflow.defn(name=CONSOLIDATE_WORKFLOW)
class ConsolidateScopeWorkflow:
    def __init__(self) -> None:
        self._requested = False
        self._force = False
        self._llm: dict[str, Any] = {}
        self._store: dict[str, Any] = {}

    @workflow.signal
    def request(self, force: bool = False) -> None:
        self._requested = True
        self._force = self._force or force

    @workflow.run
    async def run(self, req: ConsolidationRequest) -> ConsolidationSummary:
        self._llm = options.llm(req.retries, req.llm_task_queue)
        self._store = options.store(req.retries)
        summary = ConsolidationSummary()
        force = req.force
        while True:
            self._requested, self._force = False, False
            await self._consolidate(req.model_copy(update={"force": force}), summary)
            if not self._requested:
                break
            force = self._force
            if workflow.info().is_continue_as_new_suggested():
                workflow.continue_as_new(req.model_copy(update={"force": force}))
        degraded = f"; DEGRADED: {summary.degraded}" if summary.degraded else ""
        workflow.upsert_memo(
            {
                "summary": f"{summary.consolidations} consolidation(s), {summary.absorbed} reflections absorbed, version {summary.version}{degraded}"
            }
        )
        await workflow.wait_condition(workflow.all_handlers_finished)
        return summary

    async def _consolidate(self, req: ConsolidationRequest, summary: ConsolidationSummary) -> None:
        for attempt in range(1, _CAS_ATTEMPTS + 1):
            try:
                draft: ConsolidationDraft = await workflow.execute_activity_method(
                    ConsolidationActivities.draft_consolidation, req, **self._llm
                )
            except ActivityError as err:
                cause = err.cause
                if not (
                    isinstance(cause, ApplicationError)
                    and cause.type in UNUSABLE_OUTPUT
                    and workflow.patched(DEGRADED_FALLBACK)
                ):
                    raise
                # Fallback: the buffer stays as it is; the next formation that finds it due (or
                # the cold job) asks again.
                summary.degraded = str(cause)[:500]
                workflow.logger.warning(
                    "consolidation output unusable after retries: buffer kept",
                    extra={"scope_key": req.key.key, "reason": summary.degraded},
                )
                workflow.metric_meter().create_counter(
                    DEGRADED_METRIC, "Formation steps that took their fallback", "steps"
                ).add(1, {"step": "consolidate"})
                return
            summary.llm_calls += draft.llm
            if draft.content is None:
                return
            try:
                result = await workflow.execute_activity_method(
                    ConsolidationActivities.apply_consolidation, draft, **self._store
                )
            except ActivityError as err:
                cause = err.cause
                if (
                    isinstance(cause, ApplicationError)
                    and cause.type == CONFLICT
                    and attempt < _CAS_ATTEMPTS
                ):
                    workflow.logger.info(
                        "blob moved since the draft, drafting again", extra={"attempt": attempt}
                    )
                    continue
                raise
            summary.consolidations += 1
            summary.absorbed += result.absorbed
            summary.version = result.version
            return
