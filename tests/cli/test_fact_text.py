"""`mnemos facts show`'s text: where a fact came from, as a person reads it."""

from __future__ import annotations

from cli.manage import _history_text
from memory.models import Fact
from tests.store.builders import at


def _fact(session: str | None) -> Fact:
    return Fact(
        fact_id="f1", agent_id="a1", user_id="u1", scope="user", content="Alice lives in Paris",
        hash="h", embedding_model="m", source_session_id=session, formed_at=at(20),
        updated_at=at(20),
    )  # fmt: skip


def test_a_formed_fact_names_its_session_and_an_imported_one_says_it_was_imported() -> None:
    assert "from session s1" in _history_text(_fact("s1"))
    imported = _history_text(_fact(None))  # from mem0 or a file with no session
    assert "(imported)" in imported and "None" not in imported
