"""A correction back to the stored value within one window ends on the user's last word (h212 #1).

Alice's account number is stored as 4412. One conversation then says "my account number is now
4415" … "no wait, my account number is 4412". The first statement UPDATEs the stored fact; the
second was judged a repeat (NONE) of the fact as stored before the window, whose text it has.
Observed before the fix: the fact ended at 4415, the last word (4412) dropped as already known.
(The offline provider, a real SQLite store, formation step by step as the workflow runs it.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory import ids
from memory.models import Fact, FactFilter
from memory.pipeline.decision_order import said_back
from memory.pipeline.types import Decision, NewFact, Window
from tests.isolation.bench import T0, Bench, sqlite_bench


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    async with sqlite_bench(tmp_path) as bench:
        yield bench


async def _facts(bench: Bench) -> list[Fact]:
    return await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))


async def _told(bench: Bench, *said: str) -> None:
    """One formation window of Alice's messages (m1, m2, … in the bench's order)."""
    for text in said:
        await bench.say("eve", "s1", text, user_id="alice")
    await bench.form("s1", "eve")


async def test_a_correction_back_to_the_stored_number_ends_on_it(bench: Bench) -> None:
    await _told(bench, "My account number is 4412.")

    await _told(bench, "My account number is now 4415.", "No wait, my account number is 4412.")

    [fact] = await _facts(bench)
    assert "4412" in fact.content and "4415" not in fact.content, fact.content
    # The last word, with its own message and time; what it took back kept in the history.
    assert fact.source_message_ids == ("m3",)
    assert fact.said_at is not None and fact.said_at.timestamp() == T0.timestamp() + 3
    assert ["4415" in r.content for r in fact.history] == [False, True]


async def test_a_denial_taken_back_in_the_same_window_leaves_the_fact(bench: Bench) -> None:
    """The offline rules DELETE "Alice lives in Paris" for "… no longer lives in Paris"; the
    window's last word says she does."""
    await _told(bench, "I live in Paris.")

    await _told(bench, "I no longer live in Paris.", "Actually, I live in Paris.")

    [fact] = await _facts(bench)
    assert fact.content == "Alice lives in Paris.", fact.content
    assert fact.source_message_ids == ("m3",)
    assert [r.content for r in fact.history] == [
        "Alice lives in Paris.",
        "Alice no longer lives in Paris.",
    ]


async def test_a_repeat_of_the_stored_fact_nothing_else_changed_stays_a_repeat(
    bench: Bench,
) -> None:
    await _told(bench, "My account number is 4412.")

    await _told(bench, "My account number is 4412.", "My office is in room 204.")

    account = next(f for f in await _facts(bench) if "account" in f.content)
    assert (account.content, account.version, account.history) == (
        "Alice's account number is 4412.",
        1,
        (),
    )


def _window() -> Window:
    return Window(
        formation_id="eve:s1:1-3", session_id="s1", agent_id="eve", user_id="alice",
        after_seq=1, upto_seq=3, message_count=2, fact_scopes=("user",),
        reflection_scopes=("session",),
    )  # fmt: skip


def _said(*texts: str) -> list[NewFact]:
    return [NewFact(index=i, content=t, scope="user") for i, t in enumerate(texts)]


def test_a_repeat_of_what_a_merge_still_says_stays_a_repeat() -> None:
    """A model merged "likes rock" into the stored "Alice likes jazz": "likes jazz" said after
    it is still said by the merge, and dropping rock would lose what was said."""
    decisions = [
        Decision(
            new_index=0,
            event="UPDATE",
            existing_id="f1",
            expected_version=2,
            final_text="Alice likes jazz and rock",
        ),
        Decision(new_index=1, event="NONE", existing_id="f1", expected_version=2),
    ]

    facts = _said("Alice likes rock", "Alice likes jazz")
    assert said_back(_window(), decisions, facts, {"f1": "Alice likes jazz"}) == decisions


def test_a_denial_whose_new_fact_is_changed_later_is_left_to_the_order_it_has() -> None:
    """Another decision names the fact the DELETE adds: made an UPDATE, that fact would not
    exist. The window's decisions stay as they were."""
    w = _window()
    decisions = [
        Decision(new_index=0, event="DELETE", existing_id="f1", expected_version=1),
        Decision(
            new_index=1,
            event="UPDATE",
            existing_id=ids.fact_id(w.formation_id, 0),
            expected_version=1,
            final_text="Alice no longer lives in Paris, since May",
        ),
        Decision(new_index=2, event="NONE", existing_id="f1", expected_version=1),
    ]
    facts = _said(
        "Alice no longer lives in Paris",
        "Alice no longer lives in Paris, since May",
        "Alice lives in Paris",
    )

    assert said_back(w, decisions, facts, {"f1": "Alice lives in Paris"}) == decisions


@pytest.mark.parametrize(
    ("stored", "changed_to", "mention"),
    [
        ("Alice works at Google", "Alice works at Meta", "Alice worked at Google for 5 years"),
        (
            "Alice's locker code is 4412",
            "Alice's locker code is 4415",
            "Alice's previous locker code was 4412",
        ),
    ],
)
def test_a_mention_of_the_old_value_does_not_take_the_change_back(
    stored: str, changed_to: str, mention: str
) -> None:
    """A model judged the mention of the old value already known (NONE of the stored fact): it
    does not say the fact as it was stored, so the window's change stands (h219 #3)."""
    decisions = [
        Decision(
            new_index=0, event="UPDATE", existing_id="f1", expected_version=1, final_text=changed_to
        ),
        Decision(new_index=1, event="NONE", existing_id="f1", expected_version=1),
    ]

    assert said_back(_window(), decisions, _said(changed_to, mention), {"f1": stored}) == decisions
