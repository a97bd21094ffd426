"""ConsolidateScope when a draft's output stays unusable: a provider's content filter refusing one
reflection's text made every pass take its fallback, so the scope's buffer never consolidated
and grew. Now the buffer is split; the one reflection no draft takes is set aside, visibly."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.errors import InputRefusedError, WindowTooLargeError
from memory.llm.base import LLMRequest
from memory.models import SET_ASIDE
from memory.prompts.consolidate import ConsolidatedSections, ConsolidateInput
from memory.settings import ReflectionSettings
from runtime.starts import request_consolidation
from tests.context_refusals import OPENAI, refusal
from tests.fakes import echo_consolidation, refused_forbidden
from tests.harness import Harness, conversation, reflections
from workflows.summary import ConsolidationSummary


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
    h.llm.defaults["consolidate"] = refused_forbidden
    summary = await _consolidate_user(h)

    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None
    assert all(f"- {item}\n" in blob.content + "\n" for item in ("w", "x", "z"))
    assert "forbidden" not in blob.content
    assert await h.buffered(h.key("user")) == []  # no longer holds the scope back
    [aside] = await h.store.list_reflections(h.key("user"))  # listed, not in the blob
    assert (aside.content, aside.absorbed_into_version) == ("forbidden y", SET_ASIDE)
    assert summary.set_aside == [aside.reflection_id]
    assert summary.degraded is not None
    assert "1 reflection(s) set aside, the provider refused them" in summary.degraded
    assert "content filter" in summary.degraded
    assert summary.consolidations == 2  # [w, x] then [z]; [forbidden y, z] was split

    # A person corrects it: back in the buffer, and the next consolidation takes it.
    await h.store.edit_reflection(aside.reflection_id, content="y, said politely")
    assert [r.content for r in await h.buffered(h.key("user"))] == ["y, said politely"]
    again = await _consolidate_user(h)
    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None and "- y, said politely" in blob.content
    assert (again.consolidations, again.set_aside, again.degraded) == (1, [], None)


async def test_a_sessions_last_reflection_refused_alone_is_set_aside_and_its_end_finished(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Alone in its buffer, nothing else consolidates beside it; the blob drafted alone is not
    refused, so the text is: set aside. Kept buffered, it would keep the ended session
    unfinished, and the cold job would end it again, one refused draft a scan, until the purge."""
    h = await Harness.create(
        time_env, tmp_path, reflections=ReflectionSettings(threshold_session=9)
    )
    await h.record("s1", conversation(4))
    h.llm.script("extract_reflections", reflections(session=["forbidden y"]))
    async with h.worker():
        await h.form("s1")
    h.llm.defaults["consolidate"] = refused_forbidden
    async with h.worker():
        end = await h.memory.end_session("eve", "s1")
        ended = await end.result()

    assert ended.consolidation.set_aside != [] and await h.buffered(h.key("session")) == []
    later = h.memory.clock() + timedelta(hours=1)
    unfinished = await h.store.list_unfinished_ended_sessions(
        ended_before=later, after=None, limit=10
    )
    assert ("s1", "eve") not in unfinished
    assert len(h.llm.calls("consolidate")) == 2  # the refused draft, then the blob alone


async def test_when_the_provider_refuses_the_blob_itself_nothing_is_set_aside(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A blob a person wrote that the provider's filter refuses: every draft holding it is
    refused, so no reflection is to blame. The split stops at the first single reflection, once
    the blob drafted alone is refused too: a few drafts, not one per buffered reflection."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=99))
    for session, letters in (("s1", "abcd"), ("s2", "efgh")):  # a window's bound: 4 each
        await h.record(session, conversation(4))
        h.llm.script("extract_reflections", reflections(user=[f"item {c}" for c in letters]))
        async with h.worker():
            await h.form(session)
    await h.memory.manager.edit_consolidated(h.key("user"), "- a forbidden note")

    def filtered_blob(request: LLMRequest) -> ConsolidatedSections:
        p = request.task_input
        assert isinstance(p, ConsolidateInput)
        if "forbidden" in p.current_content:
            raise InputRefusedError("refused by the content filter", provider="fake")
        return echo_consolidation(request)

    h.llm.defaults["consolidate"] = filtered_blob
    summary = await _consolidate_user(h)

    assert (summary.consolidations, summary.set_aside) == (0, [])
    assert summary.degraded is not None and "refuses the blob" in summary.degraded
    assert len(await h.buffered(h.key("user"))) == 8
    # The whole, its oldest half, quarter and eighth (one reflection), the blob alone.
    assert len(h.llm.calls("consolidate")) == 5


async def test_a_reflection_whose_output_stays_unusable_is_kept_not_set_aside(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Over the word limit is not the text's fault (the first parts filled the blob): the
    reflection stays buffered, shown in the context, for the next consolidation."""
    h = await Harness.create(
        time_env, tmp_path, reflections=ReflectionSettings(threshold_user=99, word_limit_user=20)
    )
    items = [f"{w} one two three four five six" for w in ("alpha", "beta", "gamma")]
    await _buffered(h, items)
    summary = await _consolidate_user(h)

    assert summary.set_aside == [] and summary.consolidations >= 1
    assert all(
        r.absorbed_into_version != SET_ASIDE for r in await h.store.list_reflections(h.key("user"))
    )
    assert [r.content for r in await h.buffered(h.key("user"))] == [items[-1]]
    assert summary.degraded is not None and "1 kept buffered" in summary.degraded


async def test_a_refused_reflection_corrected_meanwhile_is_neither_set_aside_nor_said_to_be(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=9))
    await _buffered(h, ["w", "forbidden y"])

    async def corrected_while_drafted(request: LLMRequest) -> ConsolidatedSections:
        p = request.task_input
        assert isinstance(p, ConsolidateInput)
        if p.reflections == ["forbidden y"]:  # its own draft: a person corrects it meanwhile
            [r] = [r for r in await h.buffered(h.key("user")) if r.content == "forbidden y"]
            await h.store.edit_reflection(r.reflection_id, content="y, said politely")
        return refused_forbidden(request)

    h.llm.defaults["consolidate"] = corrected_while_drafted
    summary = await _consolidate_user(h)

    assert summary.set_aside == []
    assert summary.degraded is not None and "set aside" not in summary.degraded
    # The split consolidated a part, so the consolidation drafts again: the correction is merged.
    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None and "- y, said politely" in blob.content
    assert await h.buffered(h.key("user")) == []


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


async def test_a_buffer_the_servers_context_refuses_is_consolidated_in_parts(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The server, not mnemos' estimate, finds the draft's prompt over its context (HTTP 400
    context_length_exceeded): the pass failed; now the buffer is halved as for a buffer mnemos
    itself finds too big, every reflection consolidated, nothing set aside."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=9))
    await _buffered(h, ["v", "w", "x", "y", "z"])

    def small_context(request: LLMRequest) -> ConsolidatedSections:
        p = request.task_input
        assert isinstance(p, ConsolidateInput)
        if len(p.reflections) > 2:
            raise refusal(400, OPENAI)
        return echo_consolidation(request)

    h.llm.defaults["consolidate"] = small_context
    summary = await _consolidate_user(h)

    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None and all(f"- {item}" in blob.content for item in "vwxyz")
    assert await h.buffered(h.key("user")) == []
    assert (summary.absorbed, summary.set_aside, summary.degraded) == (5, [], None)


async def test_two_refused_reflections_first_in_the_buffer_are_both_set_aside(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Nothing consolidated yet when the first is found: the blob drafted alone, once, shows the
    provider refuses their texts, not the blob."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=9))
    await _buffered(h, ["forbidden a", "forbidden b", "c", "d"])
    h.llm.defaults["consolidate"] = refused_forbidden
    summary = await _consolidate_user(h)

    aside = {r.content for r in await h.store.list_reflections(h.key("user"))}
    assert aside == {"forbidden a", "forbidden b"} and len(summary.set_aside) == 2
    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None and "- c" in blob.content and "- d" in blob.content
    # The whole, [a b], [a], the blob alone, [b], [c d].
    assert len(h.llm.calls("consolidate")) == 6
