"""A conversation recorded late (a backfill of an old conversation, or a session the cold job forms
after a newer one) is formed after what was said since: the consolidated blob and the context
still take the latest SAID as the newest, not the latest formed (h179), also when what was said
after it is already consolidated (h189)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.models import MessageIn
from memory.prompts.consolidate import ConsolidatedSections, ConsolidateInput, render
from memory.settings import ReflectionSettings
from runtime.starts import request_consolidation
from tests.fakes import echo_consolidation
from tests.harness import Harness, reflections

NOW = datetime.now(UTC)
YESTERDAY = NOW - timedelta(days=1)
MARCH = NOW - timedelta(days=250)
TEA = "Please always bring me green tea in the morning, I gave up coffee for good."
COFFEE = "Please always bring me three cups of black coffee in the morning, strong and hot."


def said(session: str, words: str, at: datetime) -> list[MessageIn]:
    return [
        MessageIn(message_id=f"{session}-1", role="user", user_id="alice", name="Alice",
                  content=words, created_at=at),
        MessageIn(message_id=f"{session}-2", role="agent", name="Eve", content="Noted.",
                  created_at=at + timedelta(seconds=5)),
    ]  # fmt: skip


async def _yesterday_then_march_backfilled(h: Harness) -> None:
    """Yesterday's wish recorded and formed first; then March's conversation, recorded today
    with its own timestamps, formed after it."""
    await h.record("recent", said("recent", TEA, YESTERDAY))
    await h.record("march", said("march", COFFEE, MARCH))
    await h.form("recent")
    await h.form("march")


async def test_the_user_blob_keeps_what_was_said_last_not_what_was_formed_last(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    # The offline provider (no API key) fits the word limit by dropping the oldest item: room for
    # one of the two wishes only.
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(word_limit_user=24))
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    key = h.key("user")
    async with h.worker():
        await _yesterday_then_march_backfilled(h)
        await request_consolidation(h.client, h.settings, key, force=True)
        await h.consolidation_result(key)
        context = await h.memory.on_session_start("eve", "next", user_id="alice")

    blob = await h.store.get_consolidated(key)
    assert blob is not None
    # What Alice said last (yesterday) is her memory; what she said in March is outdated.
    assert "green tea" in blob.content, f"blob kept the March statement only:\n{blob.content}"
    assert "black coffee" not in blob.content
    assert "green tea" in context, context


async def test_the_model_reads_the_reflections_oldest_said_first(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The prompt's "newer information wins" reads the list's order: the backfilled March wish
    comes first, yesterday's last, though March's was formed last."""
    h = await Harness.create(time_env, tmp_path)
    h.llm.script(
        "extract_reflections",
        reflections(user=["Alice wants green tea, she gave up coffee"]),
        reflections(user=["Alice wants three cups of black coffee"]),
    )
    drafted: list[list[str]] = []

    def seen(request: LLMRequest) -> ConsolidatedSections:
        assert isinstance(request.task_input, ConsolidateInput)
        drafted.append(request.task_input.reflections)
        return echo_consolidation(request)

    h.llm.script("consolidate", seen)
    key = h.key("user")
    async with h.worker():
        await _yesterday_then_march_backfilled(h)
        formed = [r.content for r in await h.buffered(key)]
        await request_consolidation(h.client, h.settings, key, force=True)
        await h.consolidation_result(key)

    assert formed == [
        "Alice wants green tea, she gave up coffee",
        "Alice wants three cups of black coffee",
    ]
    assert drafted == [list(reversed(formed))]


async def test_the_context_shows_the_latest_said_reflection_last(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Before any consolidation, RecentReflections lists oldest → newest said: yesterday's wish
    is the last line, the March one (formed after it) before it."""
    h = await Harness.create(time_env, tmp_path)
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    async with h.worker():
        await _yesterday_then_march_backfilled(h)
        context = await h.memory.on_session_start("eve", "next", user_id="alice")

    assert await h.store.get_consolidated(h.key("user")) is None  # below the threshold
    user_part = context[context.index("<UserMemory>") : context.index("</UserMemory>")]
    assert user_part.index("black coffee") < user_part.index("green tea"), user_part


async def _tea_consolidated_then_march_formed(h: Harness) -> None:
    """Yesterday's wish formed and consolidated; then March's conversation recorded and formed:
    its reflection is buffered after a blob that holds what was said after it."""
    await _formed(h, "recent", TEA, YESTERDAY)
    await _consolidated(h)
    await _formed(h, "march", COFFEE, MARCH)


async def _formed(h: Harness, session: str, words: str, at: datetime) -> None:
    await h.record(session, said(session, words, at))
    await h.form(session)


async def _consolidated(h: Harness) -> None:
    key = h.key("user")
    await request_consolidation(h.client, h.settings, key, force=True)
    await h.consolidation_result(key)


async def test_a_conversation_recorded_after_the_blob_does_not_undo_what_it_holds(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The blob already holds yesterday's wish when March's is formed: the blob keeps when the
    earliest of what it holds was said, and March's reflection, said before it, is older than
    the blob, not newer (h189). The context shows it before the blob, and the next
    consolidation keeps yesterday's wish; the blob then holds what was said in March."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(word_limit_user=24))
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    key = h.key("user")
    async with h.worker():
        await _tea_consolidated_then_march_formed(h)
        first = await h.store.get_consolidated(key)
        context = await h.memory.on_session_start("eve", "next", user_id="alice")
        await _consolidated(h)

    assert first is not None and first.said_from is not None
    assert YESTERDAY <= first.said_from < NOW
    user_part = context[context.index("<UserMemory>") : context.index("</UserMemory>")]
    assert "<RecentReflections>" not in user_part, user_part
    assert (
        user_part.index("black coffee")
        < user_part.index("<Consolidated>")
        < user_part.index("green tea")
    ), user_part
    blob = await h.store.get_consolidated(key)
    assert blob is not None and blob.version == 2
    assert "green tea" in blob.content, f"the March statement overrode the blob:\n{blob.content}"
    assert "black coffee" not in blob.content
    assert blob.said_from is not None and MARCH <= blob.said_from < first.said_from


async def test_the_model_reads_what_was_said_before_the_blob_as_earlier(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """March's reflection, formed after a blob holding yesterday's wish, is given to the model
    as earlier than the blob (where it contradicts the blob, the blob wins), not as new. Once
    the blob holds March's words, February's are earlier still, but April's, said between two
    things the blob holds, are news, as before (h195): the blob does not know when each of its
    items was said, and "earlier" must be true of all of them."""
    h = await Harness.create(time_env, tmp_path)
    h.llm.script(
        "extract_reflections",
        reflections(user=["Alice wants green tea, she gave up coffee"]),
        reflections(user=["Alice wants three cups of black coffee"]),
        reflections(user=["Alice wants milk in her coffee"]),
        reflections(user=["Alice wants two cups of coffee"]),
    )
    drafted: list[ConsolidateInput] = []

    def seen(request: LLMRequest) -> ConsolidatedSections:
        assert isinstance(request.task_input, ConsolidateInput)
        drafted.append(request.task_input)
        return echo_consolidation(request)

    h.llm.script("consolidate", seen, seen, seen, seen)
    async with h.worker():
        await _tea_consolidated_then_march_formed(h)
        await _consolidated(h)
        for session, at in (("february", MARCH - timedelta(days=30)),
                            ("april", MARCH + timedelta(days=30))):  # fmt: skip
            await _formed(h, session, COFFEE, at)
            await _consolidated(h)

    assert [(d.earlier, d.reflections) for d in drafted] == [
        ([], ["Alice wants green tea, she gave up coffee"]),
        (["Alice wants three cups of black coffee"], []),
        (["Alice wants milk in her coffee"], []),
        ([], ["Alice wants two cups of coffee"]),
    ]
    prompt = render(drafted[1]).user
    assert prompt.index("black coffee") < prompt.index("<current_consolidated_memory>")
    assert "the memory wins" in prompt


async def test_a_blob_that_does_not_know_where_it_begins_takes_every_reflection_as_news(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A blob stored before said_from was kept (or imported without it, or rewritten by an older
    process) holds things said at any time: it never learns said_from from what it absorbs
    next, and a conversation recorded late is news to it, as before (h195)."""
    h = await Harness.create(time_env, tmp_path)
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    key = h.key("user")
    async with h.worker():
        await h.store.commit_consolidation(
            key, expected_version=0, content="VERSION: 1\n- Alice drinks black coffee",
            word_limit=200, absorbed_ids=[], at=NOW - timedelta(days=2),
        )  # fmt: skip
        await _tea_consolidated_then_march_formed(h)
        context = await h.memory.on_session_start("eve", "next", user_id="alice")

    blob = await h.store.get_consolidated(key)
    assert blob is not None and blob.version == 2 and blob.said_from is None
    user_part = context[context.index("<UserMemory>") : context.index("</UserMemory>")]
    assert "<EarlierReflections>" not in user_part, user_part
    assert user_part.index("<Consolidated>") < user_part.index("three cups"), user_part
