"""ConsolidateScope on a buffer grown past a batch (a consolidation held back by a long outage on a
busy scope). The buffer was read whole, into one draft's prompt and, when that draft failed, into
one step result: past about 16,000 reflections that result exceeded Temporal's 2 MB payload limit,
every attempt failed, and the scope never consolidated again while its buffer grew. Now a draft
merges at most a batch, oldest first, and the consolidation drafts again while more is buffered."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.errors import InputRefusedError
from memory.llm.base import LLMRequest
from memory.models import SET_ASIDE
from memory.prompts.consolidate import ConsolidatedSections, ConsolidateInput
from memory.settings import ReflectionSettings
from runtime.starts import request_consolidation
from tests.fakes import echo_consolidation
from tests.harness import Harness, conversation, reflections
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

    def filtered(request: LLMRequest) -> ConsolidatedSections:
        p = request.task_input
        assert isinstance(p, ConsolidateInput)
        if any("forbidden" in r for r in p.reflections):
            raise InputRefusedError("refused by the content filter", provider="fake")
        return echo_consolidation(request)

    h.llm.defaults["consolidate"] = filtered
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
