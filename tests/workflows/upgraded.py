"""FormMemories as a later build changes it (tests/workflows/test_versioning.py): a step added
at the start of each pass and a memo after the commit, each behind ``workflow.patched``; and the
same first change without the patch, which cannot replay a run that an older build began."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from memory.pipeline.types import FormationRequest, Window
    from workflows.cold_sessions import ColdSessionsWorkflow
    from workflows.consolidate_scope import ConsolidateScopeWorkflow
    from workflows.end_session import EndSessionWorkflow
    from workflows.form_memories import FormMemoriesWorkflow
    from workflows.naming import FORM_WORKFLOW
    from workflows.summary import FormationSummary

NEW_STEP = "test-upgrade-new-step"
NEW_MEMO = "test-upgrade-memo"
FORMED_BY = "formed_by_build"


@workflow.defn(name=FORM_WORKFLOW)
class PatchedFormMemories(FormMemoriesWorkflow):
    @workflow.run
    async def run(self, req: FormationRequest) -> FormationSummary:
        return await super().run(req)

    async def _form(self, window: Window, summary: FormationSummary) -> None:
        if workflow.patched(NEW_STEP):  # runs begun by the old build passed here without it
            await workflow.sleep(timedelta(milliseconds=1))
        await super()._form(window, summary)
        if workflow.patched(NEW_MEMO):  # reached by the new build: taken by upgraded runs too
            workflow.upsert_memo({FORMED_BY: "B"})


@workflow.defn(name=FORM_WORKFLOW)
class UnpatchedFormMemories(FormMemoriesWorkflow):
    @workflow.run
    async def run(self, req: FormationRequest) -> FormationSummary:
        return await super().run(req)

    async def _form(self, window: Window, summary: FormationSummary) -> None:
        await workflow.sleep(timedelta(milliseconds=1))  # the same step, unguarded
        await super()._form(window, summary)


OTHERS = (ConsolidateScopeWorkflow, ColdSessionsWorkflow, EndSessionWorkflow)
PATCHED = (PatchedFormMemories, *OTHERS)
UNPATCHED = (UnpatchedFormMemories, *OTHERS)
