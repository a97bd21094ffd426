"""Provenance of extracted items: a citation is checked against the window, never trusted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory import transcript
from memory.llm.heuristic import extract_facts
from memory.models import AgentConfig, StoredMessage
from memory.pipeline.sources import cited
from memory.prompts.extract_facts import ExtractFactsInput

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _msg(seq: int, content: str, user_id: str | None = "alice") -> StoredMessage:
    return StoredMessage(
        session_id="s1",
        seq=seq,
        message_id=f"m{seq}",
        role="user" if user_id else "agent",
        content=content,
        created_at=T0 + timedelta(minutes=seq),
        user_id=user_id,
        name="Alice" if user_id else "Eve",
    )


WINDOW = [
    _msg(1, "I moved to Lisbon in March."),
    _msg(2, "Lisbon is lovely. What do you do there?", user_id=None),
    _msg(3, "I work at Acme Robotics as a welder."),
    _msg(4, "My sister Joan lives in Porto."),
]


def test_valid_citations_are_kept_in_order_and_said_at_is_the_latest() -> None:
    source = cited([3, 1, 3], WINDOW, "Alice moved to Lisbon and works at Acme")
    assert source is not None
    assert source.message_ids == ("m1", "m3")
    assert source.said_at == WINDOW[2].created_at
    assert not source.repaired


def test_numbers_outside_the_window_are_dropped() -> None:
    source = cited([0, 2, 9, -1], WINDOW, "Eve asked about Lisbon")
    assert source is not None and source.message_ids == ("m2",)


def test_an_item_citing_only_outside_numbers_is_repaired_from_its_words() -> None:
    source = cited([7, 12], WINDOW, "Alice works as a welder at Acme Robotics")
    assert source is not None
    assert (source.message_ids, source.repaired) == (("m3",), True)


def test_repair_prefers_the_speakers_own_message() -> None:
    # "Lisbon" is in m1 (Alice's) and m2 (the agent's): a user item is its speaker's.
    source = cited(None, WINDOW, "Alice lives in Lisbon", speaker="alice")
    assert source is not None and source.message_ids == ("m1",)


def test_a_confused_answer_grounded_nowhere_is_dropped() -> None:
    assert cited([42], WINDOW, "Bob owns a yacht called Zephyr") is None


def test_an_uncited_item_grounded_nowhere_is_kept_unsourced_said_by_the_window_end() -> None:
    """A model that ignores the instruction loses no fact for it (nothing said is dropped)."""
    source = cited(None, WINDOW, "Bob owns a yacht called Zephyr")
    assert source is not None
    assert (source.message_ids, source.said_at) == ((), WINDOW[-1].created_at)


def test_the_heuristic_cites_the_message_each_fact_comes_from() -> None:
    agent = AgentConfig(agent_id="eve", name="Eve")
    answer = extract_facts(
        ExtractFactsInput(agent=agent, messages=transcript.prompt_messages(WINDOW), max_words=30)
    )
    by_text = {f.content: f.sources for f in answer.facts}
    assert by_text["Alice works at Acme Robotics as a welder."] == [3]
    assert by_text["Alice's sister Joan lives in Porto."] == [4]
    for fact in answer.facts:
        assert fact.sources is not None
        assert cited(fact.sources, WINDOW, fact.content) is not None
