"""Request.serialized_on: the keys a call must be serialized on, and MongoDB's use of them.

A formation decides on the agent's facts (a keep, the re-check of new facts) and on its users'
erasure epochs by reading them; forget_user and the imports decide on the epochs too. SQLite and
PostgreSQL serialize such calls already. MongoDB transactions are snapshot-isolated (they
conflict only on a document both write), so its backend writes one ``txn_keys`` document per key
in the transaction, first, and two calls sharing a key conflict and one is retried.

The in-process emulation (mongoeco) aborts such interleavings even without the key documents,
so these tests cannot show the isolation itself: only that the rule names the right keys, and
that the conflicting writes happen (a key's counter goes up with each call holding it) and that
forget_user takes away the forgotten user's key document.
"""

from __future__ import annotations

from typing import Any

import pytest

from memory.formation_commit import FactKeep
from memory.ids import content_hash
from memory.models import Fact, Reflection, StoredMessage
from memory.store.base import MemoryStore
from memory.store.mongo import MongoStore
from memory.store.rules import RecordRequest, formation_request
from memory.store.rules.erasure import EraseAllRequest, ForgetRequest
from memory.store.rules.import_sessions import session_import_request
from memory.store.rules.imports import (
    AgentsRequest,
    BlobImportRequest,
    ReflectionImportRequest,
    fact_import_request,
)
from memory.store.rules.writes import user_key
from tests.store.builders import (
    AGENT_KEY,
    MODEL,
    USER_KEY,
    Former,
    add,
    at,
    commit,
    reflection,
    unit,
    vec,
)


def _fact(fact_id: str, user_id: str | None) -> Fact:
    return Fact.model_validate(
        {
            "fact_id": fact_id, "agent_id": "a1", "user_id": user_id,
            "scope": "user" if user_id else "agent", "content": fact_id,
            "hash": content_hash(fact_id), "embedding_model": MODEL,
            "formed_at": at(0), "updated_at": at(0),
        }
    )  # fmt: skip


def _message(seq: int, user_id: str | None) -> StoredMessage:
    return StoredMessage(
        session_id="s9", seq=seq, message_id=f"s9-{seq}", role="user" if user_id else "agent",
        content=f"message {seq}", created_at=at(seq), user_id=user_id, agent_id="a1",
    )  # fmt: skip


# ---------------------------------------------------------------- the rule (no store)


def test_a_formation_is_serialized_on_its_agent_and_every_user_it_checks() -> None:
    keep = FactKeep(fact_id="f0", expected_version=1)
    ops = [
        add("f1", "Likes tea", unit(1), user_id="u2"),
        add("f2", "Terse", unit(0, 1), scope="agent"),
    ]
    u1_reflection: Reflection = reflection(USER_KEY, 1)
    formation = commit(ops=[*ops, keep], reflections=[u1_reflection, reflection(AGENT_KEY, 2)])
    # u3 spoke in the window without any memory formed of it: its epoch is checked all the same.
    formation = formation.model_copy(update={"user_epochs": {"u3": 0}})

    keys = formation_request(formation).serialized_on()

    assert keys == ("agent:a1", "user:u1", "user:u2", "user:u3")
    assert formation_request(commit(ops=[keep])).serialized_on() == ("agent:a1",)


def test_forget_and_erase_all_are_serialized_on_the_user() -> None:
    assert ForgetRequest("a1", "u1", all_agents=False).serialized_on() == ("user:u1",)
    assert ForgetRequest("a2", "u1", all_agents=True).serialized_on() == ("user:u1",)
    assert EraseAllRequest("u1").serialized_on() == ("user:u1",)
    assert user_key("u1") == "user:u1"


def test_imports_are_serialized_on_the_users_whose_epochs_they_check() -> None:
    facts = [_fact("f1", "u1"), _fact("f2", None), _fact("f3", "u2"), _fact("f4", "u1")]
    assert fact_import_request(facts).serialized_on() == ("user:u1", "user:u2")
    assert fact_import_request([_fact("f2", None)]).serialized_on() == ()

    pairs = (("a1", "u1"), ("a2", "u1"))
    people = (("s1", ("a1",), ("u2", "u1")), ("s2", ("a1",), ()))
    blobs = BlobImportRequest(("k",), pairs, people)
    assert blobs.serialized_on() == ("user:u1", "user:u2")
    reflections = ReflectionImportRequest(("r",), ("k",), (), people)
    assert reflections.serialized_on() == ("user:u2", "user:u1")

    messages = [_message(1, "u1"), _message(2, None), _message(3, "u2")]
    assert session_import_request("s9", messages).serialized_on() == ("user:u1", "user:u2")


def test_requests_whose_own_writes_meet_their_competitors_name_no_key() -> None:
    assert RecordRequest("s1", "a1", ("m1",)).serialized_on() == ()
    assert AgentsRequest(("a1",)).serialized_on() == ()


# ---------------------------------------------------------------- MongoDB writes the keys


async def _writes(store: MemoryStore) -> dict[str, int]:
    assert isinstance(store, MongoStore)
    docs: list[dict[str, Any]] = await store._db.txn_keys.find().to_list()
    return {doc["_id"]: doc["writes"] for doc in docs}


@pytest.mark.parametrize("backend", [pytest.param("mongo", marks=pytest.mark.mongo)], indirect=True)
async def test_mongo_formations_and_forgets_write_their_keys(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Likes green tea", unit(1, 0)))
    assert await _writes(store) == {"agent:a1": 1, "user:u1": 1}

    await former.form(add("f2", "Plays chess", unit(0, 1), user_id="u2"))
    await former.form(add("f3", "Answers in French", unit(0, 0, 1), scope="agent"))
    assert await _writes(store) == {"agent:a1": 3, "user:u1": 1, "user:u2": 1}

    # forget_user writes the user's key, as a formation checking the epoch does, and deletes
    # it in the same transaction: no document names the forgotten user.
    [counts] = await store.forget_user("u1", agent_id="a1", at=at(300))
    assert counts.facts == 1
    assert await _writes(store) == {"agent:a1": 3, "user:u2": 1}

    # Forgotten for every agent: the every-agent tombstone, then each agent's forget.
    await store.forget_user("u2", agent_id=None, at=at(301))
    assert await _writes(store) == {"agent:a1": 3}

    # An import checking u3's epoch writes u3's key.
    await store.import_facts([_fact("g1", "u3")], [vec(1, 1)])
    assert await _writes(store) == {"agent:a1": 3, "user:u3": 1}
