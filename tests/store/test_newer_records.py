"""A record a newer version wrote reads in this one (a field added since is not known here): while
both run during a roll, a process of the previous version reads the facts, reflections, blobs,
agents and formation results the new one writes, on every backend, as it reads its own. A
PostgreSQL body once refused a field it did not know: an old process failed every context that
read a blob the new one had consolidated."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from memory.api_keys import ApiKey
from memory.formation_commit import FormationCommitResult
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Reflection,
    ScopeKey,
    SessionAgentState,
)
from memory.store.mongo.listings import api_key_from_doc
from memory.store.mongo.reads import MongoReads
from memory.store.postgres.codec import consolidated_from_row, fact_from_row, reflection_from_row
from memory.store.records import from_record, known
from memory.store.sqlite.db import SQLiteDb

AT = datetime(2026, 11, 1, tzinfo=UTC)
KEY = ScopeKey(scope="user", agent_id="eve", user_id="alice")
LATER = {"a_field_added_later": {"nested": True}}


def _json(model: Any) -> dict[str, Any]:
    return dict(model.model_dump(mode="json"))


def test_a_postgres_body_with_a_field_added_later_reads() -> None:
    blob = ConsolidatedMemory(
        scope_key=KEY, content="- jazz", version=1, word_limit=50, updated_at=AT
    )
    assert consolidated_from_row({"body": _json(blob) | LATER}) == blob
    reflection = Reflection(
        reflection_id="r1", scope_key=KEY, content="jazz", source_session_id="s1", formed_at=AT
    )
    body = _json(reflection) | LATER
    body.pop("absorbed_into_version")
    row = {"body": body, "absorbed_into_version": None}
    assert reflection_from_row(row) == reflection


def test_a_fact_and_its_history_with_fields_added_later_read() -> None:
    fact = Fact(
        fact_id="f1", agent_id="eve", user_id="alice", scope="user", content="Alice plays jazz",
        hash="h", embedding_model="m", formed_at=AT, updated_at=AT,
    )  # fmt: skip
    body = _json(fact) | LATER
    row = {"body": body, "said_utc_offset_minutes": None, "access_count": 0,
           "last_accessed_at": None}  # fmt: skip
    assert fact_from_row(row) == fact
    revision = {"version": 1, "content": "Alice plays blues", "changed_at": AT.isoformat()}
    older = fact.model_copy(update={"version": 2})
    row["body"] = _json(older) | {"history": [revision | LATER]}
    assert [r.content for r in fact_from_row(row).history] == ["Alice plays blues"]


def test_a_model_stored_whole_with_a_field_added_later_reads_on_sqlite() -> None:
    agent = AgentConfig(agent_id="eve", name="Eve")
    with closing(sqlite3.connect(":memory:")) as conn:
        db = SQLiteDb(conn)
        assert db.model(AgentConfig, json.dumps(_json(agent) | LATER)) == agent


def test_a_mongo_document_with_a_field_added_later_reads() -> None:
    blob = ConsolidatedMemory(
        scope_key=KEY, content="- jazz", version=1, word_limit=50, updated_at=AT
    )
    doc = _json(blob) | LATER
    assert from_record(ConsolidatedMemory, doc, datetime.fromisoformat) == blob


def test_a_model_inside_a_record_stored_whole_with_a_field_added_later_reads() -> None:
    """A formation's recorded result (the idempotency check of every commit) holds the session
    state, a model that has gained fields before (h196)."""
    result = FormationCommitResult(
        formation_id="f1", state=SessionAgentState(session_id="s1", agent_id="eve")
    )
    stored = json.loads(result.model_dump_json()) | LATER
    stored["state"] |= LATER
    with closing(sqlite3.connect(":memory:")) as conn:
        assert SQLiteDb(conn).model(FormationCommitResult, json.dumps(stored)) == result


async def test_a_mongo_api_key_and_formation_result_with_fields_added_later_read() -> None:
    key = ApiKey(key_id="k1", agent_ids=("eve",), secret_sha256="ab", created_at=AT)
    assert api_key_from_doc({"_id": "k1", **key.model_dump(exclude={"key_id"})} | LATER) == key
    result = FormationCommitResult(formation_id="f1", reflections_added=1)
    stored = {"_id": "f1", "result": result.model_dump(mode="json") | LATER}

    class Commits:
        async def find_one(
            self, query: object, projection: object = None, session: object = None
        ) -> object:
            return stored

    class Db:  # as pymongo's database: a collection by name
        def __getitem__(self, name: str) -> Commits:
            assert name == "formation_commits"
            return Commits()

    assert await MongoReads(Db(), None).formation_done("f1") == result  # type: ignore[arg-type]


class _Inner(BaseModel):
    a: int


class _Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    by_name: dict[str, _Inner]
    listed: tuple[_Inner, ...]
    maybe: _Inner | None = None


def test_models_inside_dicts_tuples_and_options_lose_only_their_unknown_fields() -> None:
    """A dict's keys are its data, not fields: only the values (models) are read by their
    fields."""
    data = {
        "by_name": {"x": {"a": 1} | LATER, "y": {"a": 2}},
        "listed": [{"a": 3} | LATER],
        "maybe": {"a": 4} | LATER,
    } | LATER
    assert _Outer.model_validate(known(_Outer, data)) == _Outer(
        by_name={"x": _Inner(a=1), "y": _Inner(a=2)}, listed=(_Inner(a=3),), maybe=_Inner(a=4)
    )
