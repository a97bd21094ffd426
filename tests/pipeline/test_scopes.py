"""The scope rules of seed 002 in one place: toggles, the group-chat rule, session memory always."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.models import AgentConfig, Role, ScopeKey, SessionInfo, StoredMessage
from memory.names import users_named
from memory.scopes import (
    as_owned,
    formable_scopes,
    may_change,
    place_fact,
    sole_speaker,
    visible_scopes,
)

T = datetime(2026, 1, 1, tzinfo=UTC)


def session(*users: str) -> SessionInfo:
    return SessionInfo(session_id="s1", agent_ids=("eve",), user_ids=users, created_at=T)


def agent(**toggles: bool) -> AgentConfig:
    return AgentConfig(agent_id="eve", name="Eve", **toggles)


def test_a_window_forms_user_memory_only_with_one_user_and_session_memory_always() -> None:
    assert formable_scopes(agent(), session("alice")) == (
        ("agent", "user"),
        ("agent", "user", "session"),
    )
    assert formable_scopes(agent(), session("alice", "bob")) == (("agent",), ("agent", "session"))
    off = agent(agent_memory_enabled=False, user_memory_enabled=False)
    assert formable_scopes(off, session("alice")) == ((), ("session",))


def test_a_turn_sees_its_own_user_memory_only_as_the_sessions_only_user() -> None:
    mine = visible_scopes(agent(), session("alice"), "alice")
    assert mine.keys == (
        ScopeKey.agent("eve"),
        ScopeKey.user("eve", "alice"),
        ScopeKey.session("eve", "s1"),
    )
    assert mine.fact_filter is not None and mine.fact_filter.user_id == "alice"
    stranger = visible_scopes(agent(), session("alice"), "mallory")
    assert stranger.keys == (ScopeKey.agent("eve"), ScopeKey.session("eve", "s1"))
    group = visible_scopes(agent(), session("alice", "bob"), "alice")
    assert ScopeKey.user("eve", "alice") not in group.keys


def test_outside_a_session_only_the_toggles_count() -> None:
    visible = visible_scopes(agent(agent_memory_enabled=False), None, "alice")
    assert visible.keys == (ScopeKey.user("eve", "alice"),)
    assert visible_scopes(agent(user_memory_enabled=False), None, None).fact_filter is not None
    assert visible_scopes(agent(agent_memory_enabled=False), None, None).fact_filter is None


def test_scope_key_constructors_build_the_keys_of_each_scope() -> None:
    assert ScopeKey.agent("eve").key == "agent:eve"
    assert ScopeKey.user("eve", "alice").key == "user:eve:alice"
    assert ScopeKey.session("eve", "s1").key == "session:eve:s1"
    assert ScopeKey.of("user", "eve", user_id="alice", session_id="s1") == ScopeKey.user(
        "eve", "alice"
    )


def _said(user_id: str | None, role: Role = "user", name: str | None = None) -> StoredMessage:
    return StoredMessage(
        session_id="s1", seq=1, message_id="m1", role=role, content="hi",
        created_at=datetime(2026, 1, 1, tzinfo=UTC), user_id=user_id, name=name,
    )  # fmt: skip


def test_a_left_out_speaker_is_the_windows_user_only_when_nobody_else_spoke() -> None:
    alice, agent = _said("alice"), _said(None, role="agent")
    assert sole_speaker([alice, agent, alice], "alice") == "alice"
    # An anonymous user message, or another user, makes the attribution ambiguous: no owner.
    assert sole_speaker([alice, _said(None)], "alice") is None
    assert sole_speaker([alice, _said("bob")], "alice") is None
    assert sole_speaker([alice], None) is None
    assert (
        place_fact("user", sole_speaker([alice, _said(None)], "alice"), "alice", ("user",)) is None
    )


def test_agent_memory_that_names_a_user_of_the_window_is_theirs() -> None:
    window = [
        _said("u-17", name="Alice Martin"),
        _said(None, role="agent", name="Bob"),  # the agent's name is nobody's user memory
        _said("carol"),
    ]
    assert users_named("Alice Martin's new job is at Acme", window) == {"u-17"}
    assert users_named("carol prefers tea; so does CAROL", window) == {"carol"}
    assert users_named("Bob runs the front desk", window) == frozenset()
    assert users_named("Caroline likes jazz", window) == frozenset()  # a whole word only
    # Models call people by their first name, or by title and surname (found by H175).
    assert users_named("Alice is the CTO of Acme Robotics", window) == {"u-17"}
    assert users_named("Ms. Martin moves to Berlin next month", window) == {"u-17"}

    assert as_owned("agent", None, "Alice Martin is the CTO of Acme", window) == ("user", "u-17")
    # Naming two users: nobody's, so never kept as user memory (a fact is dropped).
    assert as_owned("agent", None, "Alice Martin and carol are friends", window) == ("user", None)
    assert place_fact("user", None, "u-17", ("agent", "user")) is None
    # Not named, or not classified as agent memory: as the model said.
    assert as_owned("agent", None, "The desk opens at 8:00", window) == ("agent", None)
    assert as_owned("session", None, "carol asked for a summary", window) == ("session", None)


def test_agent_memory_that_tells_a_persons_private_detail_is_its_speakers() -> None:
    window = [_said("carol")]
    # Somebody else's health, told by carol: hers to be reminded of, not every user's to read.
    said = "Dana was diagnosed with asthma in 2024."
    assert as_owned("agent", "carol", said, window) == ("user", "carol")
    assert place_fact("user", "carol", "carol", ("agent", "user")) == "user"
    # With no speaker to own it (a group chat, a guest), it is nobody's: a fact is dropped.
    assert as_owned("agent", None, said, window) == ("user", None)
    assert place_fact("user", None, None, ("agent",)) is None
    # What the agent's work is stays the agent's.
    assert as_owned("agent", "carol", "The clinic offers allergy testing", window) == (
        "agent",
        "carol",
    )


@pytest.mark.parametrize(
    "said",
    [
        "The user is the CTO of Acme Robotics and plans a festival in Lisbon",
        "User works as CTO of Acme Robotics",
        "the user's budget for the trip is 3,000 euros",
        "Works as CTO of Acme Robotics and plans a festival in Lisbon",
        "Recently moved to Lisbon",
        # In other words (review H177): the message's own first person, a pronoun, another noun
        "I am the CTO of Acme Robotics",
        "My company is Acme Robotics",
        "She works at Acme Robotics",
        "They plan a festival in Lisbon",
        "Their budget is 3,000 euros",
        "The customer works at Acme Robotics",
        "This user is the CTO of Acme Robotics",
        "Planning a festival in Lisbon",
    ],
)
def test_agent_memory_about_its_unnamed_speaker_is_the_speakers(said: str) -> None:
    """Models write "The user …", or no subject, for the person who said it: kept as agent memory,
    every other user of the agent read it (found by H169)."""
    window = [_said("carol")]
    assert as_owned("agent", "carol", said, window) == ("user", "carol")
    assert as_owned("agent", None, said, window) == ("user", None)  # a group's: dropped


@pytest.mark.parametrize(
    "said",
    [
        "The support team answers user tickets within 2 days",
        "Tickets cost 50 euros",
        # The agent's work that says "user" or "speaker", or has no subject (review H177)
        "The user tickets queue opens at 8:00",
        "Speaker notes for the Mars Festival are due on Friday",
        "Always confirm dates with the user before booking a venue",
        "Plans start at 10 dollars a month",
        "Has a 30-day refund policy",
        "Currently supports English and Portuguese only",
    ],
)
def test_agent_memory_about_the_work_that_says_user_stays_the_agents(said: str) -> None:
    assert as_owned("agent", "carol", said, [_said("carol")]) == ("agent", "carol")


def test_a_users_fact_never_changes_the_agents_memory() -> None:
    assert not may_change("user", "agent")  # every user reads it
    assert may_change("user", "user") and may_change("agent", "agent")
    assert may_change("agent", "user")  # shared words written into this user's own fact
