"""During a rolling upgrade, processes of the previous version read the facts this one stores:
their Fact and FactRevision forbid unknown fields, so no stored body or history may carry
said_utc_offset_minutes where they read it. The offset rides inside each said_at (a PostgreSQL
body's, a history's revisions': they read the same instant) or beside the record (a column, a
field they pass over)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from memory.models import Fact, FactRevision
from memory.store.mongo.docs import dt, fact_fields
from memory.store.postgres.codec import fact_body, fact_from_row
from memory.store.records import from_record, history_of
from memory.store.sqlite.codec import history_to_json
from tests.store.builders import at

CHICAGO = timezone(timedelta(hours=-5))


def _previous[M: BaseModel](model: type[M], **nested: Any) -> type[BaseModel]:
    """``model`` as the previous version defined it: without said_utc_offset_minutes."""
    fields: dict[str, Any] = {
        name: (nested.get(name, info.annotation), info)
        for name, info in model.model_fields.items()
        if name != "said_utc_offset_minutes"
    }
    config = ConfigDict(extra="forbid", frozen=True)
    return create_model(f"Previous{model.__name__}", __config__=config, **fields)


PreviousRevision = _previous(FactRevision)
PreviousFact = _previous(Fact, history=tuple[PreviousRevision, ...])  # type: ignore[valid-type]


def _fact() -> Fact:
    revision = FactRevision(
        version=1, content="Alice is flying to Paris on 8 May", changed_at=at(100),
        said_at=at(10), said_utc_offset_minutes=-300,
    )  # fmt: skip
    return Fact(
        fact_id="f1", agent_id="a1", user_id="u1", scope="user",
        content="Alice is flying to Rome on 9 May", hash="h", embedding_model="m",
        said_at=at(50), said_utc_offset_minutes=330, formed_at=at(0), updated_at=at(100),
        version=2, history=(revision,),
    )  # fmt: skip


def test_the_previous_version_reads_a_sqlite_history() -> None:
    stored = json.loads(history_to_json(_fact().history))
    [old] = [PreviousRevision.model_validate(r) for r in stored]
    said = old.said_at  # type: ignore[attr-defined]
    assert said == at(10) and said.utcoffset() == timedelta(hours=-5)  # the speaker's clock
    [back] = [FactRevision.model_validate(r) for r in history_of(stored)]
    assert back == _fact().history[0]


def test_the_previous_version_reads_a_postgres_body() -> None:
    body = fact_body(_fact()).obj
    old = PreviousFact.model_validate(body)
    assert old.said_at == at(50)  # type: ignore[attr-defined]
    assert old.said_at.utcoffset() == timedelta(minutes=330)  # type: ignore[attr-defined]
    assert old.history[0].said_at == datetime(2025, 1, 1, 7, 0, 10, tzinfo=CHICAGO)  # type: ignore[attr-defined]


def test_the_previous_version_reads_a_mongo_document() -> None:
    doc = {"_id": "f1", **fact_fields(_fact())}
    assert doc["said_utc_offset_minutes"] == 330  # a field it passes over: it reads by name
    old = from_record(PreviousFact, doc, dt, fact_id="f1")
    assert old.history[0].said_at == at(10)  # type: ignore[attr-defined]


def test_a_postgres_body_a_previous_worker_wrote_reads_its_said_at_in_utc_with_its_offset() -> None:
    # The previous version commits a new worker's FactAdd as it got it: said_at on the speaker's
    # clock, in the body, and no offset column (NULL).
    body = PreviousFact.model_validate(
        {**_fact().model_dump(exclude={"said_utc_offset_minutes"}), "history": ()}
        | {"said_at": at(50).astimezone(CHICAGO)}
    ).model_dump(mode="json")
    row = {"body": body, "said_utc_offset_minutes": None, "access_count": 0}
    fact = fact_from_row(row | {"last_accessed_at": None})
    assert fact.said_at is not None
    assert (fact.said_at, fact.said_at.utcoffset()) == (at(50), timedelta(0))
    assert fact.said_utc_offset_minutes == -300
