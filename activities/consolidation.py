"""Consolidation activities: draft a blob (LLM + validation), apply it (compare-and-set), and ask the
one consolidator of a scope key to run."""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio import activity
from temporalio.client import Client

from activities.errors import classified
from activities.heartbeat import asking, heartbeating, this_attempt
from activities.paid import paying
from memory.deps import Deps
from memory.logging import get_logger
from memory.models import ScopeKey
from memory.pipeline import consolidation
from memory.pipeline.types import (
    BufferedReflection,
    ConsolidationDraft,
    ConsolidationRequest,
    ConsolidationResult,
)
from runtime.starts import request_consolidation


class ConsolidationActivities:
    def __init__(self, deps: Deps, client: Client) -> None:
        self.deps = deps
        self.client = client

    @activity.defn(name="draft_consolidation")
    async def draft_consolidation(self, req: ConsolidationRequest) -> ConsolidationDraft:
        deterministic = self.deps.llm.deterministic
        with paying() as paid, asking(paid, deterministic=deterministic):
            out = await heartbeating(consolidation.draft(self.deps, req, this_attempt()))
        return paid.reported(out)

    @activity.defn(name="apply_consolidation")
    async def apply_consolidation(self, draft: ConsolidationDraft) -> ConsolidationResult:
        with classified():
            out = await consolidation.apply(self.deps, draft, datetime.now(UTC))
        get_logger(scope_key=draft.key.key, workflow_id=activity.info().workflow_id).info(
            "consolidated", version=out.version, absorbed=out.absorbed
        )
        return out

    @activity.defn(name="buffered_reflections")
    async def buffered_reflections(self, key: ScopeKey) -> list[BufferedReflection]:
        with classified():
            return await consolidation.buffered(self.deps, key)

    @activity.defn(name="buffered_batch")
    async def buffered_batch(self, req: ConsolidationRequest) -> list[BufferedReflection]:
        with classified():
            return await consolidation.buffered_batch(self.deps, req)

    @activity.defn(name="set_aside_reflection")
    async def set_aside_reflection(self, key: ScopeKey, reflection: BufferedReflection) -> bool:
        with classified():
            done = await consolidation.set_aside(self.deps, key, reflection)
        get_logger(scope_key=key.key, workflow_id=activity.info().workflow_id).warning(
            "reflection set aside" if done else "reflection not set aside: changed since",
            reflection_id=reflection.reflection_id,
        )
        return done

    @activity.defn(name="request_consolidation")
    async def request_consolidation(self, keys: list[ScopeKey], force: bool) -> None:
        """Signal-with-start the consolidator of each key: one workflow id per key serialises them,
        and a request arriving while it runs makes it go round once more instead of being dropped."""
        for key in keys:
            await request_consolidation(self.client, self.deps.settings, key, force=force)
