"""ConsolidateScope on a buffer grown past a batch (a consolidation held back by a long outage on a
busy scope). The buffer was read whole, into one draft's prompt and, when that draft failed, into
one step result: past about 16,000 reflections that result exceeded Temporal's 2 MB payload limit,
every attempt failed, and the scope never consolidated again while its buffer grew. Now a draft
merges at most a batch, oldest first, and the consolidation drafts again while more is buffered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment

from memory.errors import InvalidModelOutputError
from memory.llm.base import LLMRequest
from memory.models import SET_ASIDE
from memory.prompts.consolidate import ConsolidatedSections, ConsolidateInput
from memory.settings import ReflectionSettings
from runtime.starts import request_consolidation
from tests.fakes import echo_consolidation, refused_forbidden
from tests.harness import Harness, conversation, reflections
from workflows.consolidate_scope import IN_BATCHES
from workflows.summary import ConsolidationSummary

ITEMS = [f"item {c}" for c in "abcdefgh"]


async def grown_buffer(h: Harness, batch: int, threshold: int, items: list[str] = ITEMS) -> None:
    """Eight of the user's reflections buffered while nothing consolidated them (a threshold no
    formation reaches), then the settings a worker runs with: ``batch`` and ``threshold``."""
    for n, session in enumerate(("s1", "s2")):
        await h.record(session, conversation(4))
        h.llm.script("extract_reflections", reflections(user=items[4 * n : 4 * n + 4]))
        async with h.worker():
            await h.form(session)
    assert len(await h.buffered(h.key("user"))) == 8
    h.settings = h.settings.model_copy(
        update={
            "reflections": ReflectionSettings(threshold_user=threshold, consolidation_batch=batch)
        }
    )


async def _consolidate(h: Harness, *, force: bool) -> ConsolidationSummary:
    handle = await request_consolidation(h.client, h.settings, h.key("user"), force=force)
    async with h.worker():
        return await handle.result()


def _drafted(h: Harness) -> list[list[str]]:
    drafts = [r.task_input for r in h.llm.calls("consolidate")]
    return [p.reflections for p in drafts if isinstance(p, ConsolidateInput)]


async def test_a_buffer_bigger_than_a_batch_is_merged_in_turns_oldest_first(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=99))
    await grown_buffer(h, batch=3, threshold=2)
    summary = await _consolidate(h, force=True)

    assert [len(d) for d in _drafted(h)] == [3, 3, 2]
    assert set(_drafted(h)[0]) <= set(ITEMS[:4])  # the first session's first
    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None and all(f"- {item}" in blob.content for item in ITEMS)
    assert await h.buffered(h.key("user")) == []
    assert (summary.consolidations, summary.absorbed, summary.degraded) == (3, 8, None)


async def test_what_is_left_below_the_threshold_waits_as_any_buffer_does(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Asked by a formation (not forced): batches while the buffer is due, then the rest waits
    for the threshold, shown in the context meanwhile, as a small buffer always did."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=99))
    await grown_buffer(h, batch=3, threshold=3)
    summary = await _consolidate(h, force=False)

    assert [len(d) for d in _drafted(h)] == [3, 3]
    assert len(await h.buffered(h.key("user"))) == 2
    assert (summary.consolidations, summary.absorbed) == (2, 6)


async def test_a_refused_reflection_in_a_later_batch_splits_only_that_batch(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The split reads the batch its draft failed on, not the buffer: no draft nor step result
    ever holds more than a batch, and the batches after it are still merged."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=99))
    await grown_buffer(h, batch=3, threshold=2, items=[*ITEMS[:4], "forbidden e", *ITEMS[5:]])

    h.llm.defaults["consolidate"] = refused_forbidden
    summary = await _consolidate(h, force=True)

    assert max(len(d) for d in _drafted(h)) == 3
    [aside] = [
        r
        for r in await h.store.list_reflections(h.key("user"))
        if r.absorbed_into_version == SET_ASIDE
    ]
    assert aside.content == "forbidden e" and summary.set_aside == [aside.reflection_id]
    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None
    assert all(f"- {item}" in blob.content for item in ITEMS if item != "item e")
    assert await h.buffered(h.key("user")) == []


async def test_a_refused_oldest_batch_does_not_hold_back_the_rest(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Nothing in the first batch consolidates, but both are set aside: the buffer shrank, so
    the consolidation goes on to the batches behind it."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=99))
    await grown_buffer(h, batch=2, threshold=2, items=["forbidden a", "forbidden b", *ITEMS[2:]])
    h.llm.defaults["consolidate"] = refused_forbidden
    summary = await _consolidate(h, force=True)

    assert await h.buffered(h.key("user")) == []
    assert (summary.absorbed, len(summary.set_aside)) == (6, 2)


async def test_a_reflection_no_draft_takes_is_left_out_of_the_later_batches(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Kept buffered (its draft over the word limit, not refused), it would fail every later
    batch's draft and split it again: 2,000 buffered cost 699 drafts instead of about 41."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=99))
    await grown_buffer(h, batch=3, threshold=2, items=["bad a", *ITEMS[1:]])

    def over_the_limit_with_it(request: LLMRequest) -> ConsolidatedSections:
        p = request.task_input
        assert isinstance(p, ConsolidateInput)
        if any("bad" in r for r in p.reflections):
            raise InvalidModelOutputError("consolidated blob over the word limit")
        return echo_consolidation(request)

    h.llm.defaults["consolidate"] = over_the_limit_with_it
    summary = await _consolidate(h, force=True)

    assert [r.content for r in await h.buffered(h.key("user"))] == ["bad a"]
    assert summary.absorbed == 7
    # The first batch whole, then its first half, "bad a" alone (each tried twice); never again.
    with_it = [d for d in _drafted(h) if "bad a" in d]
    assert with_it == [["bad a", "item b", "item c"]] * 2 + [["bad a"]] * 2


async def test_the_summary_counts_every_run_of_a_consolidation_continued_as_new(
    time_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session end reads it (what was absorbed, what set aside), and so does the cold job (a
    set-aside reflection corrected since makes the end due again)."""
    # Temporal suggests it at about 4 MB of history (a buffer of some 10,000): here every pass.
    monkeypatch.setattr(workflow.Info, "is_continue_as_new_suggested", lambda _: True)
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=99))
    await grown_buffer(h, batch=3, threshold=2, items=[*ITEMS[:4], "forbidden e", *ITEMS[5:]])
    h.llm.defaults["consolidate"] = refused_forbidden
    summary = await _consolidate(h, force=True)

    assert await h.buffered(h.key("user")) == []
    assert (summary.absorbed, len(summary.set_aside), summary.consolidations) == (7, 1, 4)
    assert sum(c.count for c in summary.llm_calls) == 4  # the answered drafts, of every run


async def test_a_consolidation_of_the_previous_version_still_drafts_the_whole_buffer(
    time_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rolling upgrade: a run begun before batches (no IN_BATCHES marker: it drafts once per
    request) whose draft an upgraded worker makes must still merge every reflection."""
    patched = workflow.patched
    monkeypatch.setattr(workflow, "patched", lambda pid: pid != IN_BATCHES and patched(pid))
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=99))
    await grown_buffer(h, batch=3, threshold=2)
    summary = await _consolidate(h, force=True)

    assert await h.buffered(h.key("user")) == []
    assert [len(d) for d in _drafted(h)] == [8] and summary.absorbed == 8


class _Reads:
    """The store, noting the ``limit`` of every read of a buffer."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.limits: list[int | None] = []

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if name != "unabsorbed_reflections":
            return found

        async def read(key: Any, **kw: Any) -> Any:
            self.limits.append(kw.get("limit"))
            return await found(key, **kw)

        return read


async def test_no_step_reads_more_than_a_batch_of_the_buffer(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Split parts too: each read the whole buffer to pick its few ids (500 ms a draft on a
    buffer of 20,000, on SQLite)."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=99))
    await grown_buffer(h, batch=3, threshold=2, items=[*ITEMS[:4], "forbidden e", *ITEMS[5:]])
    reads = _Reads(h.store)
    h.worker_store = reads  # type: ignore[assignment]
    h.llm.defaults["consolidate"] = refused_forbidden
    await _consolidate(h, force=True)

    assert reads.limits and None not in reads.limits, reads.limits
