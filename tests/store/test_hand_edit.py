"""memory.store.rules.versions.edited_by_hand: a fact's current text is a person's edit when the
revision of the version before cites what the fact cites (an edit keeps the sources)."""

from __future__ import annotations

from memory.models import Fact
from memory.store.rules.versions import Provenance, edited_by_hand, rewritten, told_before
from tests.store.builders import at


def _formed(content: str = "Alice lives in Paris") -> Fact:
    return Fact(
        fact_id="f1", agent_id="a1", user_id="u1", scope="user", content=content, hash="h",
        embedding_model="m", source_session_id="s1", source_message_ids=("m1",),
        formation_id="a1:s1:1-1~abcd1234", said_at=at(10), formed_at=at(20), updated_at=at(20),
    )  # fmt: skip


def _edit(fact: Fact, content: str, seconds: float) -> Fact:
    return rewritten(fact, content=content, model="m", at=at(seconds), reason="typo")


def _form(fact: Fact, content: str, seconds: float, formation: str = "a1:s1:2-2~abcd1234") -> Fact:
    source = Provenance(("m2",), formation, at(seconds - 5), "s1")
    return rewritten(
        fact, content=content, model="m", at=at(seconds), reason="x", provenance=source
    )


def test_a_formed_fact_is_no_edit() -> None:
    assert edited_by_hand(_formed()) is None
    assert edited_by_hand(_form(_formed(), "Alice lives in Berlin", 100)) is None


def test_edits_name_the_latest_edit_and_the_version_the_messages_said() -> None:
    once = _edit(_formed(), "Alice lives in Lyon", 100)
    twice = _edit(once, "Alice lives in Nice", 200)
    for fact, when in ((once, at(100)), (twice, at(200))):
        edit = edited_by_hand(fact)
        assert edit is not None and edit.at == when
        assert (edit.said.version, edit.said.content) == (1, "Alice lives in Paris")
    # Formed again after the edit: formed, and an edit of that version says it.
    reformed = _form(twice, "Alice lives in Berlin", 300)
    assert edited_by_hand(reformed) is None
    edit = edited_by_hand(_edit(reformed, "Alice lives in Bonn", 400))
    assert edit is not None and (edit.said.version, edit.said.content) == (
        4,
        "Alice lives in Berlin",
    )


def test_a_statement_learnt_late_is_passed_over() -> None:
    edited = _edit(_formed(), "Alice lives in Lyon", 100)
    late = Provenance(("m0",), "a1:s1:9-9~abcd1234", at(5), "s1")
    fact = told_before(edited, content="Alice lived in Rome", at=at(200), provenance=late)
    edit = edited_by_hand(fact)
    assert edit is not None and (edit.at, edit.said.content) == (at(100), "Alice lives in Paris")
    assert edited_by_hand(told_before(_formed(), content="x", at=at(200), provenance=late)) is None


def _imported() -> Fact:
    """A fact as an import writes it (mem0's): citing nothing."""
    return _formed().model_copy(
        update={"source_message_ids": (), "formation_id": None, "said_at": None}
    )


def test_an_edit_of_a_fact_citing_nothing_is_its_latest_write() -> None:
    edited = _edit(_imported(), "Alice lives in Lyon", 100)
    edit = edited_by_hand(edited)
    assert edit is not None and (edit.at, edit.said.content) == (at(100), "Alice lives in Paris")
    # Statements learnt late since (told over the edit) leave it the edit.
    late = Provenance(("m0",), "a1:s1:9-9~abcd1234", at(5), "s1")
    told = told_before(edited, content="Alice lived in Rome", at=at(200), provenance=late)
    edit = edited_by_hand(told)
    assert edit is not None and edit.at == at(100)
    # Edited twice: the latest edit, which replaced the first (the import's history and a
    # person's earlier edit cannot be told apart).
    edit = edited_by_hand(_edit(edited, "Alice lives in Nice", 300))
    assert edit is not None and (edit.at, edit.said.content) == (at(300), "Alice lives in Lyon")


def test_an_imported_history_citing_nothing_is_no_edit() -> None:
    # Eden's update_history: the change dated apart from the fact's own update time.
    changed = _edit(_imported(), "Alice lives in Lyon", 100)
    imported = changed.model_copy(update={"updated_at": at(150)})
    assert edited_by_hand(imported) is None
    assert edited_by_hand(_imported()) is None
