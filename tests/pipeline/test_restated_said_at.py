"""A fact said again counts as said at its latest statement (h212 #2), across windows too.

Alice said she lives in Berlin on day 1 (session s1) and again on day 5 (s3); a conversation of
day 3 where she said she lives in Paris is recorded only afterwards (imported history, a backlog).
Day 5 is her latest word: Berlin stays, day 3's Paris is kept in its history as learnt late.
Observed before the fix: day 5's repeat was dropped as already known (NONE, nothing written), the
fact stayed said on day 1, and day 3's Paris, said after that, replaced Berlin.
(The offline provider, a real SQLite store, formation step by step as the workflow runs it.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from memory.models import Fact, FactFilter, MessageIn
from tests.isolation.bench import T0, Bench, sqlite_bench

DAY = timedelta(days=1)
START = T0 - 10 * DAY  # day 0 of the story, before the bench's clock


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    async with sqlite_bench(tmp_path) as bench:
        yield bench


async def _told(bench: Bench, session: str, message: str, text: str, day: int) -> None:
    """Alice says ``text`` on ``day`` in ``session``, formed at once."""
    said = MessageIn(
        message_id=message, role="user", name="Alice", user_id="alice",
        content=text, created_at=START + day * DAY,
    )  # fmt: skip
    await bench.memory.record_messages("eve", session, [said])
    await bench.form(session, "eve")


async def _home(bench: Bench) -> Fact:
    [fact] = await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))
    return fact


async def test_an_older_statement_learnt_late_does_not_override_a_newer_restatement(
    bench: Bench,
) -> None:
    await _told(bench, "s1", "a1", "I live in Berlin.", day=1)
    await _told(bench, "s3", "c1", "I live in Berlin.", day=5)

    await _told(bench, "s2", "b1", "I live in Paris.", day=3)

    fact = await _home(bench)
    assert fact.content == "Alice lives in Berlin.", fact.content
    # Said on day 5, citing that statement (in another session: its own messages only).
    assert (fact.said_at, fact.source_session_id, fact.source_message_ids) == (
        START + 5 * DAY,
        "s3",
        ("c1",),
    )
    # The first statement's citation kept (its session's messages), then Paris learnt late.
    assert [(r.content, r.source_session_id, r.source_message_ids) for r in fact.history] == [
        ("Alice lives in Berlin.", "s1", ("a1",)),
        ("Alice lives in Paris.", "s2", ("b1",)),
    ]


async def test_a_restatement_in_the_same_session_cites_both_statements(bench: Bench) -> None:
    await _told(bench, "s1", "a1", "I live in Berlin.", day=1)

    await _told(bench, "s1", "a2", "I live in Berlin.", day=5)

    fact = await _home(bench)
    assert (fact.content, fact.version, fact.history) == ("Alice lives in Berlin.", 1, ())
    assert (fact.said_at, fact.source_message_ids) == (START + 5 * DAY, ("a2", "a1"))


async def test_an_older_restatement_changes_nothing(bench: Bench) -> None:
    """Day 1's Berlin, recorded after day 5's: the fact stays as day 5 said it."""
    await _told(bench, "s3", "c1", "I live in Berlin.", day=5)
    before = await _home(bench)

    await _told(bench, "s1", "a1", "I live in Berlin.", day=1)

    assert await _home(bench) == before
