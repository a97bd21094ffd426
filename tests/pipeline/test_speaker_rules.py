"""The rules that keep a speaker's personal content out of agent memory, read alone: who a text
names (memory/names.py ``users_named``), what is about an unnamed speaker (``about_the_speaker``),
what a merged text may write into an agent fact (``personal_merge``, memory/pipeline/dedup.py
``resolve``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.models import Role, StoredMessage
from memory.names import users_named
from memory.pipeline.dedup import resolve
from memory.pipeline.types import NewFact, SimilarFact
from memory.prompts.decide_facts import FactDecision
from memory.scopes import about_the_speaker, as_owned, personal_merge

TEXT = "Alice Smith is the CTO of Acme Robotics"


def _said(user_id: str | None, content: str = "hi", role: Role = "user") -> StoredMessage:
    return StoredMessage(
        session_id="s1", seq=1, message_id="m1", role=role, content=content,
        created_at=datetime(2026, 1, 1, tzinfo=UTC), user_id=user_id,
    )  # fmt: skip


@pytest.mark.parametrize("user", ["alice_smith", "alice.smith", "alice-smith", "AliceSmith"])
def test_an_id_made_of_names_names_its_user_by_them(user: str) -> None:
    window = [_said(user)]
    assert users_named(TEXT, window) == {user}
    assert users_named("Ms. Smith moves to Berlin", window) == {user}


@pytest.mark.parametrize("user", ["u-8f3a21", "user_42", "support-team", "guest-user"])
def test_an_opaque_id_names_nobody_but_itself(user: str) -> None:
    assert users_named(TEXT, [_said(user)]) == frozenset()


@pytest.mark.parametrize(
    ("user", "text"),
    [
        ("mark_price", "The price of the Pro plan is 20 dollars a month"),
        ("mark_price", "Mark the invoice as paid once the bank confirms"),
        ("bill_jones", "The monthly bill is emailed on the first of the month"),
        ("rose_hill", "The hotel is at the top of the hill"),
        ("acme_buyer", "Acme ships orders within two days"),
        ("acme_buyer", "Orders from Acme ship within two days"),
    ],
)
def test_a_word_in_a_users_id_does_not_claim_agent_facts(user: str, text: str) -> None:
    """An id of words spells a name only where the text writes it as one (h188)."""
    assert as_owned("agent", None, text, [_said(user)]) == ("agent", None)


@pytest.mark.parametrize(
    "text", ["Mark Price is the CTO of Acme", "Mark is the CTO of Acme", "Acme hired Mr. Price"]
)
def test_an_id_of_words_names_its_user_where_the_text_writes_the_name(text: str) -> None:
    assert users_named(text, [_said("mark_price")]) == {"mark_price"}


@pytest.mark.parametrize(
    "said",
    [
        "Hi, I'm Alice Smith, CTO of Acme Robotics.",
        "I am Alice Smith.",
        "Good morning! This is Alice Smith from Acme.",
        "As I said, my name is Alice Smith.",
        "Please call me Alice.",
        # Greetings and openings people write (h188).
        "Hey there, I'm Alice Smith, CTO of Acme Robotics.",
        "Hi everyone, I'm Alice Smith.",
        "Thanks! I'm Alice Smith, the new CTO.",
        "Alice Smith here, CTO of Acme Robotics.",
        # In lower case, as many type in chat: the capitals say nothing there.
        "hi i'm alice smith, cto of acme robotics",
        "hey there, this is alice smith from acme",
        "alice smith here",
        "My name is alice smith and I run Acme.",  # "my name is" says it whatever the case
    ],
)
def test_the_name_a_speaker_gives_herself_names_her(said: str) -> None:
    window = [_said("u-8f3a21", said), _said("u-77c0de")]
    assert users_named(TEXT, window) == {"u-8f3a21"}
    assert as_owned("agent", None, TEXT, window) == ("user", "u-8f3a21")


@pytest.mark.parametrize(
    "said",
    [
        "I'm French, and Alice Smith is my CTO.",  # a people, not a name
        "So I'm Alice Smith's assistant.",  # not an introduction
        "This is Acme Robotics code from our repo.",
        "Nice to meet you, I think Alice Smith will call.",
        "i'm tired, and Alice Smith is my CTO",  # lower case, but not an introduction of hers
    ],
)
def test_a_capitalised_word_said_otherwise_is_no_name(said: str) -> None:
    window = [_said("u-8f3a21", said)]
    assert users_named(TEXT, window) == frozenset()
    # Another user's words name nobody either: the agent's name-giving is not the user's.
    agent_says = [_said("u-8f3a21"), _said(None, "Hi, I'm Alice Smith.", role="agent")]
    assert users_named(TEXT, agent_says) == frozenset()


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("Can you call me Monday about the refund?", "The Berlin store is closed on Monday"),
        ("This is Premium.", "Premium includes priority support"),
    ],
)
def test_a_word_after_call_me_or_this_is_mid_talk_is_no_name(said: str, text: str) -> None:
    assert as_owned("agent", None, text, [_said("u-8f3a21", said)]) == ("agent", None)


@pytest.mark.parametrize(
    "text",
    [
        "Is the CTO of Acme Robotics",
        "Was a nurse in Lisbon until 2020",
        "Is in therapy for depression",
        "Earns 90000 dollars a year",
        "Was born in 1990 in Porto",
        # h188: the same shapes, missed before.
        "Makes 90000 dollars a year",
        "Currently works as a nurse in Lisbon",
        "Used to be a nurse in Lisbon",
        "Is based in Berlin and works at Acme as a nurse",
        "Is 34 years old and lives in Porto",
    ],
)
def test_a_subjectless_person_statement_is_the_speakers(text: str) -> None:
    assert as_owned("agent", "carol", text, [_said("carol")]) == ("user", "carol")


@pytest.mark.parametrize(
    "text",
    [
        "Opens at 9 am on weekdays",
        "Is open on Sundays until 2 pm",
        "Was founded in 1990 in Porto",
        "Is located at 12 Elm Street",
        "Has a 30-day refund policy",
        # h188: read as the speaker's by an exclusion list of business states.
        "Was acquired by Google in 2019",
        "Is the only clinic in Porto with an MRI scanner",
        "Is a 24/7 service",
        "Was discontinued in 2022",
        "Is a nurse staffing agency in Lisbon",
        "Earns 2% cashback on every purchase",
        "Each patient's treatment plan is reviewed monthly by two doctors",
        "Members who are in therapy get a 10% discount on the gym",
    ],
)
def test_a_subjectless_business_statement_stays_the_agents(text: str) -> None:
    assert not about_the_speaker(text)
    assert as_owned("agent", "carol", text, [_said("carol")]) == ("agent", "carol")


@pytest.mark.parametrize(
    ("merged", "personal"),
    [
        ("The clinic opens at 9 am, where the user gets her diabetes treatment", True),
        ("The clinic opens at 9 am, and the user is a nurse there", True),
        ("The clinic opens at 9 am; she works there on Mondays", True),
        ("The clinic opens at 9 am on weekdays, and is open on Sundays", False),
        ("The clinic opens at 9 am, which suits early patients", False),
    ],
)
def test_a_merge_is_read_as_the_items_it_joins(merged: str, personal: bool) -> None:
    assert personal_merge(merged) is personal


STORED = SimilarFact(fact_id="f_c", content="The clinic opens at 9 am", version=2, similarity=0.9)
NEW = NewFact(index=0, content="The clinic opens at 9 am on weekdays", scope="agent")
HERS = "The clinic opens at 9 am on weekdays, where the user gets her diabetes treatment"


def _update(merged: str) -> list[FactDecision]:
    return [FactDecision(new_fact_index=0, event="UPDATE", existing_index=0, merged_text=merged)]


def test_a_personal_merge_of_an_agent_fact_keeps_the_update_in_the_new_facts_words() -> None:
    """Its wording refused, the UPDATE stands, as a merge that loses a value does: an ADD would
    hold the one fact twice in agent memory (h188)."""
    [kept] = resolve(_update(HERS), [NEW], [STORED], {0: {0}}, agent_facts=frozenset({"f_c"}))
    assert (kept.event, kept.existing_id, kept.final_text) == ("UPDATE", "f_c", NEW.content)
    assert kept.expected_version == STORED.version


def test_a_policy_merge_of_an_agent_fact_leaves_one_copy() -> None:
    stored = SimilarFact(
        fact_id="f_p", content="The Pro plan costs 20 dollars a month", version=1, similarity=0.9
    )
    new = NewFact(
        index=0, content="The Pro plan costs 20 dollars a month and can be cancelled", scope="agent"
    )
    merged = "The Pro plan costs 20 dollars a month, and the user can cancel anytime"
    [d] = resolve(_update(merged), [new], [stored], {0: {0}}, agent_facts=frozenset({"f_p"}))
    assert (d.event, d.existing_id, d.final_text) == ("UPDATE", "f_p", new.content)


def test_a_merge_into_the_users_own_fact_or_in_the_agents_words_stands() -> None:
    [mine] = resolve(_update(HERS), [NEW], [STORED], {0: {0}})  # f_c is a user's fact
    assert (mine.event, mine.existing_id, mine.final_text) == ("UPDATE", "f_c", HERS)
    plain = "On weekdays the clinic opens at 9 am"
    [agents] = resolve(_update(plain), [NEW], [STORED], {0: {0}}, agent_facts=frozenset({"f_c"}))
    assert (agents.event, agents.existing_id, agents.final_text) == ("UPDATE", "f_c", plain)
