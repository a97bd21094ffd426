"""A formed version's sources: the messages of the session incarnation it was formed in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.ids import content_hash, formation_id
from memory.models import Fact
from memory.store.rules.versions import Provenance, rewritten
from tests.store.builders import MODEL, at

FIRST = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
AGAIN = FIRST + timedelta(days=2)  # the same session id, recorded again after a forget


def hotline(formed_in: str, sources: tuple[str, ...]) -> Fact:
    text = "The support hotline is 555-0100."
    return Fact.model_validate({
        "fact_id": "f1", "agent_id": "eve", "user_id": None, "scope": "agent",
        "content": text, "hash": content_hash(text), "embedding_model": MODEL,
        "formed_at": at(0), "updated_at": at(0), "source_session_id": "s1",
        "source_message_ids": sources, "formation_id": formed_in, "said_at": at(0),
    })  # fmt: skip


MERGED = "The support hotline is 555-0100, open every day."  # says all v1 said, and more
CORRECTED = "The support hotline is 555-0199."  # says another number: v1's messages did not


def updated(fact: Fact, formation: str, content: str = MERGED) -> Fact:
    return rewritten(
        fact,
        content=content,
        model=MODEL,
        at=at(3),
        reason="update",
        provenance=Provenance(("m3",), formation, at(2), "s1"),
    )


def test_an_update_in_the_same_session_cites_its_messages_and_the_earlier_ones() -> None:
    fact = hotline(formation_id("s1", "eve", 0, 2, FIRST), ("m2",))
    new = updated(fact, formation_id("s1", "eve", 2, 3, FIRST))
    assert new.source_message_ids == ("m3", "m2")


def test_a_correction_in_the_same_session_cites_only_what_said_it() -> None:
    # "The hotline is 555-0100" (m2), then "sorry, it is 555-0199" (m3): m2 never said 555-0199.
    fact = hotline(formation_id("s1", "eve", 0, 2, FIRST), ("m2",))
    new = updated(fact, formation_id("s1", "eve", 2, 3, FIRST), CORRECTED)
    assert new.source_message_ids == ("m3",)
    assert new.said_at == at(2)
    assert new.history[-1].source_message_ids == ("m2",)  # the version it replaced keeps its own


def test_an_update_in_the_session_id_recorded_again_cites_only_its_own_messages() -> None:
    # Its "m2" names another person's message now: citing it would show bob's words (and
    # maybe his private ones) as a source of the hotline fact.
    fact = hotline(formation_id("s1", "eve", 0, 2, FIRST), ("m2",))
    new = updated(fact, formation_id("s1", "eve", 2, 3, AGAIN))
    assert new.source_message_ids == ("m3",)
    assert new.history[-1].source_message_ids == ("m2",)  # the earlier version keeps its own


def test_a_re_formed_version_is_of_the_incarnation_its_original_read() -> None:
    fact = hotline(formation_id("s1", "eve", 0, 2, FIRST), ("m2",))
    reform = f"{formation_id('s1', 'eve', 2, 3, FIRST)}:reform:4"
    assert updated(fact, reform).source_message_ids == ("m3", "m2")


@pytest.mark.parametrize(
    "denial",
    [
        "The support hotline is no longer 555-0100.",
        "The support hotline is not 555-0100.",
        "The support hotline isn't 555-0100 anymore.",
        "The support hotline is never 555-0100 on Sundays.",
    ],
)
def test_a_denial_in_the_same_session_cites_only_what_denied_it(denial: str) -> None:
    # "The hotline is 555-0100" (m2), then "it is no longer 555-0100" (m3): m2 said the
    # opposite of the new version, though every word of it is still there.
    fact = hotline(formation_id("s1", "eve", 0, 2, FIRST), ("m2",))
    new = updated(fact, formation_id("s1", "eve", 2, 3, FIRST), denial)
    assert new.source_message_ids == ("m3",)


def test_a_statement_after_a_denial_cites_only_what_said_it() -> None:
    # "It is no longer 555-0100" (m2), then "it is 555-0100 again" (m3).
    denied = hotline(formation_id("s1", "eve", 0, 2, FIRST), ("m2",)).model_copy(
        update={"content": "The support hotline is not 555-0100."}
    )
    new = updated(
        denied, formation_id("s1", "eve", 2, 3, FIRST), "The support hotline is 555-0100."
    )
    assert new.source_message_ids == ("m3",)


def test_a_merge_of_two_denials_cites_both() -> None:
    denied = hotline(formation_id("s1", "eve", 0, 2, FIRST), ("m2",)).model_copy(
        update={"content": "The support hotline is not open on Sundays."}
    )
    merged = "The support hotline is not open on Sundays or holidays."
    new = updated(denied, formation_id("s1", "eve", 2, 3, FIRST), merged)
    assert new.source_message_ids == ("m3", "m2")
