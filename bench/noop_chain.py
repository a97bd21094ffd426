"""The baseline of bench/formation.py: a workflow that runs N no-op activities one after another."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="noop")
async def noop(step: int) -> int:
    return step


@workflow.defn(name="NoopChain")
class NoopChainWorkflow:
    @workflow.run
    async def run(self, steps: int) -> int:
        for step in range(steps):
            await workflow.execute_activity(
                noop, step, start_to_close_timeout=timedelta(seconds=30)
            )
        return steps
