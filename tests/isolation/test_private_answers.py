"""A user's personal details never reach another user, however they are said: an answer to the
agent's question about them without "I" or "my" ("At Initech, as a night nurse since 2019."), or a
private detail of a third person ("Dana's address is 12 Elm Street."), told where the user is
alone with the agent. The public MemoryClient, the offline provider, a real SQLite store; what a
user would check: Bob's context and search, then Alice's own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.isolation.bench import Bench, sqlite_bench


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    async with sqlite_bench(tmp_path) as bench:
        yield bench


async def test_answers_to_the_agents_question_about_the_user_are_hers(bench: Bench) -> None:
    await bench.say("eve", "s1", "The office is at 12 Elm Street since May 2024.", user_id="alice")
    question = "Where do you work, where were you born, and what do you earn?"
    await bench.say("eve", "s1", question, user_id=None, name="Eve", role="agent")
    await bench.say("eve", "s1", "At Initech, as a night nurse since 2019.", user_id="alice")
    await bench.say("eve", "s1", "Born in 1985 in Lyon, grew up in Marseille.", user_id="alice")
    await bench.say("eve", "s1", "Salary is 90000 dollars a year before tax.", user_id="alice")
    await bench.form("s1", "eve")
    queries = ["nurse Initech", "born Lyon Marseille", "salary dollars", "office Elm Street"]

    await bench.say("eve", "s2", "Hello, I am Bob and I am new here.", user_id="bob")
    seen = await bench.seen_by("eve", "s2", "bob", queries)
    for hers in ("night nurse", "Lyon", "90000"):
        assert hers not in seen, f"bob reads alice's {hers!r}:\n{seen}"
    # What she said of the work, before the question, is still every user's.
    assert "12 Elm Street" in seen
    # Nothing is lost: hers where she is alone, the next session.
    await bench.say("eve", "s3", "Hello again.", user_id="alice")
    mine = await bench.seen_by("eve", "s3", "alice", queries)
    for hers in ("night nurse", "Lyon", "90000"):
        assert hers in mine, f"alice lost her {hers!r}:\n{mine}"


# A private detail of somebody else, one per category the README names, told without "I"/"my".
THIRD_PARTY = [
    ("Dana's address is 12 Elm Street in Springfield.", "Elm Street"),
    ("Dana's number is 555-0101 if you need her.", "555-0101"),
    ("Ben's credit card is 4111 1111 1111 1111.", "4111"),
    ("Ben's PIN is 4471.", "4471"),
    ("Ben is undocumented and came to the US in 2010.", "undocumented"),
    ("Dana applied for asylum in Germany in 2019.", "asylum"),
    ("Ben was born in 1990 in Porto.", "Porto"),
]


@pytest.mark.parametrize(("line", "detail"), THIRD_PARTY)
async def test_a_third_persons_private_detail_is_not_read_by_another_user(
    bench: Bench, line: str, detail: str
) -> None:
    await bench.say("eve", "s1", line, user_id="alice")
    await bench.form("s1", "eve")

    await bench.say("eve", "s2", "Hello, I am Bob and I am new here.", user_id="bob")
    assert detail not in await bench.seen_by("eve", "s2", "bob", [line])
    await bench.say("eve", "s3", "Hello again.", user_id="alice")
    assert detail in await bench.seen_by("eve", "s3", "alice", [line])


async def test_a_salary_told_alone_is_not_read_by_who_joins_later(bench: Bench) -> None:
    await bench.say("eve", "desk", "Salary is 90000 dollars a year before tax.", user_id="alice")
    await bench.form("desk", "eve")
    await bench.say("eve", "desk", "Hi, I am Bob, joining the chat.", user_id="bob")

    assert "90000" not in await bench.seen_by("eve", "desk", "bob", ["salary dollars"])
