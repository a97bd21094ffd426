"""ConsolidateScope when a draft's output stays unusable: a provider's content filter refusing one
reflection's text made every pass take its fallback, so the scope's buffer never consolidated
and grew. Now the buffer is split; the one reflection no draft takes is set aside, visibly."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.errors import InputRefusedError, WindowTooLargeError
from memory.llm.base import LLMRequest
from memory.models import SET_ASIDE
from memory.prompts.consolidate import ConsolidatedSections, ConsolidateInput
from memory.settings import ReflectionSettings
from runtime.starts import request_consolidation
from tests.fakes import echo_consolidation
from tests.harness import Harness, conversation, reflections
from workflows.summary import ConsolidationSummary


def _filtered(request: LLMRequest) -> ConsolidatedSections:
    """A provider whose content filter refuses any prompt holding the word 'forbidden'."""
    p = request.task_input
    assert isinstance(p, ConsolidateInput)
    if any("forbidden" in r for r in p.reflections):
        raise InputRefusedError("refused by the content filter", provider="fake")
    return echo_consolidation(request)


async def _buffered(h: Harness, items: list[str]) -> None:
    """The user's reflections, below the threshold (no formation asks for them)."""
    await h.record("s1", conversation(4))
    h.llm.script("extract_reflections", reflections(user=items))
    async with h.worker():
        await h.form("s1")


async def _consolidate_user(h: Harness) -> ConsolidationSummary:
    """Ask as a session end or the cold job does (forced)."""
    handle = await request_consolidation(h.client, h.settings, h.key("user"), force=True)
    async with h.worker():
        return await handle.result()


async def test_a_refused_reflection_is_set_aside_and_the_rest_consolidated(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=9))
    await _buffered(h, ["w", "x", "forbidden y", "z"])
    h.llm.defaults["consolidate"] = _filtered
    summary = await _consolidate_user(h)

    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None
    assert all(f"- {item}\n" in blob.content + "\n" for item in ("w", "x", "z"))
    assert "forbidden" not in blob.content
    assert await h.buffered(h.key("user")) == []  # no longer holds the scope back
    [aside] = await h.store.list_reflections(h.key("user"))  # listed, not in the blob
    assert (aside.content, aside.absorbed_into_version) == ("forbidden y", SET_ASIDE)
    assert summary.set_aside == [aside.reflection_id]
    assert summary.degraded is not None and "1 reflection(s) set aside" in summary.degraded
    assert "content filter" in summary.degraded
    assert summary.consolidations == 2  # [w, x] then [z]; [forbidden y, z] was split

    # A person corrects it: back in the buffer, and the next consolidation takes it.
    await h.store.edit_reflection(aside.reflection_id, content="y, said politely")
    assert [r.content for r in await h.buffered(h.key("user"))] == ["y, said politely"]
    again = await _consolidate_user(h)
    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None and "- y, said politely" in blob.content
    assert (again.consolidations, again.set_aside, again.degraded) == (1, [], None)


async def test_a_lone_refused_reflection_is_kept_until_others_consolidate_beside_it(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """With nothing else in the buffer, nothing shows the blob or prompt are not what the
    provider refuses: the reflection stays buffered, the pass degraded as before."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=9))
    await _buffered(h, ["forbidden y"])
    h.llm.defaults["consolidate"] = _filtered
    summary = await _consolidate_user(h)

    assert (summary.consolidations, summary.set_aside) == (0, [])
    assert summary.degraded is not None and "content filter" in summary.degraded
    assert [r.content for r in await h.buffered(h.key("user"))] == ["forbidden y"]
    assert await h.store.get_consolidated(h.key("user")) is None


async def test_nothing_is_set_aside_when_every_part_is_refused(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The provider refuses every draft (the blob or the prompt is what it objects to): no
    reflection is blamed; the whole buffer is kept, the pass degraded."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=9))
    await _buffered(h, ["w", "x", "y"])
    h.llm.defaults["consolidate"] = InputRefusedError("refused by the content filter")
    summary = await _consolidate_user(h)

    assert (summary.consolidations, summary.set_aside) == (0, [])
    assert summary.degraded is not None
    assert sorted(r.content for r in await h.buffered(h.key("user"))) == ["w", "x", "y"]
    # Each part halved down to single reflections, each drafted once: bounded.
    assert len(h.llm.calls("consolidate")) == 5  # [w x y], [w], [x y], [x], [y]


async def test_a_buffer_too_big_for_the_models_context_is_consolidated_in_parts(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A buffer grown past a small model's context (memory/llm/context_fit.py refuses to send
    it): halved until each part fits, every reflection consolidated, nothing set aside."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=9))
    await _buffered(h, ["v", "w", "x", "y", "z"])

    def small_context(request: LLMRequest) -> ConsolidatedSections:
        p = request.task_input
        assert isinstance(p, ConsolidateInput)
        if len(p.reflections) > 2:
            raise WindowTooLargeError("consolidate: a prompt of about 9000 tokens leaves none")
        return echo_consolidation(request)

    h.llm.defaults["consolidate"] = small_context
    summary = await _consolidate_user(h)

    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None and all(f"- {item}" in blob.content for item in "vwxyz")
    assert await h.buffered(h.key("user")) == []
    assert (summary.absorbed, summary.set_aside, summary.degraded) == (5, [], None)
