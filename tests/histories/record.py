"""Record the workflow histories that tests/workflows/test_replay.py replays.

Run after a deliberate, versioned change of workflow code (``python -m tests.histories.record``) and
commit the JSON files: CI then fails on any change that would break runs already in flight. Name
the histories to record (``python -m tests.histories.record end_session/first``) to leave the others as
they were recorded, by older code.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_test_server
from memory.errors import InputRefusedError, MalformedOutputError
from memory.llm.base import LLMRequest
from memory.prompts.consolidate import ConsolidateInput
from memory.prompts.decide_facts import FactDecision, FactDecisions
from memory.prompts.extract_facts import ExtractedFacts
from memory.settings import FormationSettings, ReflectionSettings
from runtime.payloads import payload_data_converter
from runtime.starts import request_consolidation
from tests.fakes import echo_consolidation, transcript_of, transient
from tests.harness import (
    CORRECTION,
    T0,
    Harness,
    a_fact_then_its_correction,
    add_all,
    conversation,
    facts,
    gate_first_extraction,
    reflections,
    triggered_during_a_pass,
)
from workflows.naming import (
    consolidation_workflow_id,
    formation_workflow_id,
    session_end_workflow_id,
)

HERE = Path(__file__).parent


@contextlib.asynccontextmanager
async def _harness(**settings: Any) -> AsyncIterator[Harness]:
    """A harness on a fresh time-skipping server, shut down after the recording."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=payload_data_converter,
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            yield await Harness.create(env, Path(tmp), **settings)
    finally:
        await env.shutdown()


async def record(only: set[str]) -> None:
    async with _harness() as h:
        await h.record("s0", conversation(4, prefix="a"))
        await h.record("s1", conversation(4))
        h.llm.script("extract_facts", facts(("Alice works at Acme Robotics", "user")))
        h.llm.script(
            "extract_facts",
            facts(
                ("Alice works at Acme Robotics as CTO", "user"),
                ("Bob Martins leads logistics", "agent"),
            ),
        )
        h.llm.script(
            "decide_facts",
            FactDecisions(
                decisions=[
                    FactDecision(
                        new_fact_index=0, event="UPDATE", existing_index=0,
                        merged_text="Alice works at Acme Robotics as CTO",
                    )
                ]
            ),
        )  # fmt: skip
        h.llm.script("extract_reflections", reflections(user=["likes bullets"]))
        h.llm.script("extract_reflections", reflections(session=["w", "x", "y", "z"]))
        await h.record("s2", conversation(3, prefix="e"))
        h.llm.script("extract_reflections", reflections(session=["wraps up"]))
        async with h.worker():
            await h.form("s0")
            await h.form("s1")
            await h.consolidation_result(h.key("session"))
            await h.memory.on_session_end("eve", "s2")
        for name, wf_id in [
            ("form_memories_first", formation_workflow_id("eve", "s0")),
            ("form_memories_update_and_consolidate", formation_workflow_id("eve", "s1")),
            ("consolidate_scope", consolidation_workflow_id(h.key("session"))),
            # A subfolder, so the CLI's replay test of the top folder keeps its count.
            ("end_session/first", session_end_workflow_id("eve", "s2")),
        ]:
            if only and name not in only:
                continue
            history = await h.client.get_workflow_handle(wf_id).fetch_history()
            (HERE / f"{name}.json").write_text(history.to_json())
            print(f"recorded {name}.json ({len(history.events)} events)")


def _cut_off(request: LLMRequest) -> None:
    raise MalformedOutputError("output hit the token limit (finish_reason=length)")


async def record_degraded() -> None:
    """degraded/: FormMemories whose decision step took its fallback, ConsolidateScope whose draft
    did (the DEGRADED_FALLBACKS / DEGRADED_FALLBACK patches)."""
    async with _harness() as h:
        await a_fact_then_its_correction(h)
        h.llm.defaults["decide_facts"] = _cut_off
        h.llm.defaults["consolidate"] = _cut_off
        h.llm.script("extract_reflections", reflections())
        h.llm.script("extract_reflections", reflections(session=["w", "x", "y", "z"]))
        async with h.worker():
            await h.form("s0")
            await h.form("s1")
            await h.consolidation_result(h.key("session"))
        (HERE / "degraded").mkdir(exist_ok=True)
        for name, wf_id in [
            ("form_memories_degraded", formation_workflow_id("eve", "s1")),
            ("consolidate_scope_degraded", consolidation_workflow_id(h.key("session"))),
        ]:
            history = await h.client.get_workflow_handle(wf_id).fetch_history()
            (HERE / "degraded" / f"{name}.json").write_text(history.to_json())
            print(f"recorded degraded/{name}.json ({len(history.events)} events)")


def _unreadable(request: LLMRequest) -> ExtractedFacts:
    """One fact per message; a message saying "unreadable" makes the answer unusable."""
    shown = transcript_of(request)
    if any("unreadable" in m.content for m in shown):
        raise MalformedOutputError("output does not fit the schema")
    return facts(*[(f"Alice said {m.content}", "user") for m in shown])


async def record_split() -> None:
    """split/: FormMemories that splits a window down to one unreadable message, passes it over
    and requests consolidation once when the drain ends (the SPLIT_WINDOWS patch)."""
    async with _harness() as h:
        messages = conversation(4)
        messages[2] = messages[2].model_copy(update={"content": "unreadable"})
        await h.record("s1", messages)
        h.llm.defaults["extract_facts"] = _unreadable
        h.llm.defaults["decide_facts"] = add_all
        h.llm.defaults["extract_reflections"] = reflections(session=["w", "x", "y", "z"])
        async with h.worker():
            await h.form("s1")
        (HERE / "split").mkdir(exist_ok=True)
        wf_id = formation_workflow_id("eve", "s1")
        history = await h.client.get_workflow_handle(wf_id).fetch_history()
        (HERE / "split" / "form_memories_split.json").write_text(history.to_json())
        print(f"recorded split/form_memories_split.json ({len(history.events)} events)")


async def record_local_reads() -> None:
    """local_reads/: FormMemories with its window and candidate reads as local activities (the
    LOCAL_READS patch), forming a second session whose fact has a candidate to decide against."""
    async with _harness() as h:
        await a_fact_then_its_correction(h)
        h.llm.script("decide_facts", CORRECTION)
        async with h.worker():
            await h.form("s0")
            await h.form("s1")
        (HERE / "local_reads").mkdir(exist_ok=True)
        wf_id = formation_workflow_id("eve", "s1")
        history = await h.client.get_workflow_handle(wf_id).fetch_history()
        path = HERE / "local_reads" / "form_memories_local_reads.json"
        path.write_text(history.to_json())
        print(f"recorded local_reads/{path.name} ({len(history.events)} events)")


async def record_due_after() -> None:
    """due_after/: FormMemories whose commit left the session due (messages recorded during its
    pass, the hot path's second trigger held back) and went round by itself (DUE_AFTER_COMMIT)."""
    async with _harness(formation=FormationSettings(message_interval=4)) as h:
        gate = gate_first_extraction(h)
        await h.record("s1", conversation(4))
        async with h.worker():
            first, held = await triggered_during_a_pass(h, gate, "s1", conversation(4, start=4))
            assert first.started and not held.started
            await h.client.get_workflow_handle(first.workflow_id or "").result()
        (HERE / "due_after").mkdir(exist_ok=True)
        history = await h.client.get_workflow_handle(first.workflow_id or "").fetch_history()
        path = HERE / "due_after" / "form_memories_due_after.json"
        path.write_text(history.to_json())
        print(f"recorded due_after/{path.name} ({len(history.events)} events)")


async def record_again_after_erasure(*, forced: bool = False) -> None:
    """again_after_erasure/: FormMemories whose commit was discarded because a user of its group
    chat was forgotten during the pass, and which formed the window again (AGAIN_AFTER_ERASURE);
    ``forced``: started by a turn, a forced request (the session's end) arriving during that
    pass, the window below the threshold once alice's message is gone (AGAIN_KEEPS_FORCE)."""
    settings: dict[str, Any] = {}
    if forced:
        settings["formation"] = FormationSettings(min_messages=4, message_interval=4)
    async with _harness(**settings) as h:
        gate = gate_first_extraction(h)
        await h.record("g", conversation(2))
        await h.record("g", conversation(2, start=2, user="bob", prefix="b"))
        async with h.worker():
            run = await h.start("g", force=not forced)
            await gate.entered.wait()
            await h.store.forget_user("alice", agent_id="eve", at=T0 + timedelta(hours=1))
            if forced:
                await h.start("g", force=True)
            gate.release.set()
            summary = await run.result()
        (HERE / "again_after_erasure").mkdir(exist_ok=True)
        history = await run.fetch_history()
        name = "form_memories_again_forced" if forced else "form_memories_again_after_erasure"
        path = HERE / "again_after_erasure" / f"{name}.json"
        path.write_text(history.to_json())
        print(f"recorded again_after_erasure/{path.name} ({len(history.events)} events): {summary}")


async def record_outage(name: str) -> None:
    """outage/: ConsolidateScope of a user scope, asked forced (as a session end does), whose draft
    failed through all the LLM step's retries, the provider down. Recorded as
    ``consolidate_scope_outage_before_patch`` by the code before OUTAGE_WAIT (the run failed) and
    as ``consolidate_scope_outage`` from it on (the run waited on a timer, drafted again and
    consolidated)."""
    async with _harness(reflections=ReflectionSettings(threshold_user=5)) as h:
        await h.record("s1", conversation(4))
        h.llm.script("extract_reflections", reflections(user=["w", "x", "y", "z"]))
        down = [transient("provider down") for _ in range(h.settings.retries.llm_max_attempts)]
        h.llm.script("consolidate", *down)
        async with h.worker():
            await h.form("s1")
            # Started through the test client: the server skips time while this waits on it.
            run = await request_consolidation(h.client, h.settings, h.key("user"), force=True)
            with contextlib.suppress(WorkflowFailureError):
                print(await run.result())
        (HERE / "outage").mkdir(exist_ok=True)
        history = await run.fetch_history()
        (HERE / "outage" / f"{name}.json").write_text(history.to_json())
        print(f"recorded outage/{name}.json ({len(history.events)} events)")


async def record_conflicts(name: str) -> None:
    """conflicts/: ConsolidateScope of a user scope, asked forced, while a person corrects one of
    its five buffered reflections during each of five drafts (each commit meets an edit). Recorded
    as ``consolidate_scope_conflicts_before_patch`` by the code before CONFLICT_BACKOFF (the fifth
    conflict failed the run) and as ``consolidate_scope_conflicts`` from it on (it waited, drafted
    again and consolidated every correction)."""
    async with _harness(reflections=ReflectionSettings(threshold_user=9)) as h:
        await h.record("s1", conversation(4))
        h.llm.script("extract_reflections", reflections(user=["v", "w", "x", "y", "z"]))
        async with h.worker():
            await h.form("s1")
            order = [r.reflection_id for r in await h.buffered(h.key("user"))]
            edits = iter(enumerate(order))

            async def corrects_one(request: LLMRequest) -> Any:
                if (edit := next(edits, None)) is not None:
                    await h.store.edit_reflection(edit[1], content=f"fixed {edit[0]}")
                return echo_consolidation(request)

            h.llm.defaults["consolidate"] = corrects_one
            run = await request_consolidation(h.client, h.settings, h.key("user"), force=True)
            with contextlib.suppress(WorkflowFailureError):
                print(await run.result())
        (HERE / "conflicts").mkdir(exist_ok=True)
        history = await run.fetch_history()
        (HERE / "conflicts" / f"{name}.json").write_text(history.to_json())
        print(f"recorded conflicts/{name}.json ({len(history.events)} events)")


async def record_refused() -> None:
    """refused/: ConsolidateScope of a user scope, asked forced, whose provider refuses any draft
    holding one of its four reflections: from SPLIT_UNUSABLE on it split the buffer, consolidated
    the three others and set that one aside."""

    def filtered(request: LLMRequest) -> Any:
        p = request.task_input
        assert isinstance(p, ConsolidateInput)
        if any("forbidden" in r for r in p.reflections):
            raise InputRefusedError("refused by the content filter")
        return echo_consolidation(request)

    async with _harness(reflections=ReflectionSettings(threshold_user=9)) as h:
        await h.record("s1", conversation(4))
        h.llm.script("extract_reflections", reflections(user=["w", "x", "forbidden y", "z"]))
        h.llm.defaults["consolidate"] = filtered
        async with h.worker():
            await h.form("s1")
            run = await request_consolidation(h.client, h.settings, h.key("user"), force=True)
            print(await run.result())
        (HERE / "refused").mkdir(exist_ok=True)
        history = await run.fetch_history()
        (HERE / "refused" / "consolidate_scope_refused.json").write_text(history.to_json())
        print(f"recorded refused/consolidate_scope_refused.json ({len(history.events)} events)")


if __name__ == "__main__":
    wanted = set(sys.argv[1:])
    if wanted == {"refused"}:
        asyncio.run(record_refused())
    elif wanted & {"consolidate_scope_conflicts", "consolidate_scope_conflicts_before_patch"}:
        asyncio.run(record_conflicts(wanted.pop()))
    elif wanted & {"consolidate_scope_outage", "consolidate_scope_outage_before_patch"}:
        asyncio.run(record_outage(wanted.pop()))
    elif wanted == {"degraded"}:
        asyncio.run(record_degraded())
    elif wanted == {"split"}:
        asyncio.run(record_split())
    elif wanted == {"local_reads"}:
        asyncio.run(record_local_reads())
    elif wanted == {"due_after"}:
        asyncio.run(record_due_after())
    elif wanted == {"again_after_erasure"}:
        asyncio.run(record_again_after_erasure())
    elif wanted == {"again_forced"}:
        asyncio.run(record_again_after_erasure(forced=True))
    else:
        asyncio.run(record(wanted))
