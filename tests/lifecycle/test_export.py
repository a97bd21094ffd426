"""The export format round-trips: what is written is what import records recreate, ids included."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest

from memory.lifecycle.export import (
    AgentLine,
    ConsolidatedLine,
    ExportFormatError,
    FactLine,
    HeaderLine,
    MessageLine,
    Record,
    ReflectionLine,
    read_export,
    to_import,
    write_export,
)
from memory.lifecycle.stored import consolidated_of, fact_of, reflection_of
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    FactRevision,
    Reflection,
    ScopeKey,
    StoredMessage,
)

T = datetime(2026, 11, 1, 9, tzinfo=UTC)
MODEL = "minilm-int8"

AGENT = AgentConfig(agent_id="eve", name="Eve", persona="Helpful", tier=1)
FACT = Fact(
    fact_id="f_1",
    agent_id="eve",
    user_id="alice",
    scope="user",
    content="Alice works at Acme as CTO",
    hash="x",
    embedding_model=MODEL,
    source_session_id="s1",
    formed_at=T,
    updated_at=T + timedelta(days=1),
    version=2,
    previous_content="Alice works at Acme",
    history=(FactRevision(version=1, content="Alice works at Acme", changed_at=T),),
    access_count=4,
    last_accessed_at=T + timedelta(days=2),
)
OLD = Fact(
    fact_id="f_2",
    agent_id="eve",
    scope="agent",
    content="The shop closes at 6",
    hash="y",
    embedding_model=MODEL,
    formed_at=T,
    updated_at=T,
    invalidated_at=T + timedelta(days=3),
    invalidated_by="f_3",
)
USER = ScopeKey(scope="user", agent_id="eve", user_id="alice")
SESSION = ScopeKey(scope="session", agent_id="eve", session_id="s1")
REFLECTIONS = [
    Reflection(
        reflection_id="r_1",
        scope_key=USER,
        content="Alice likes examples",
        source_session_id="s1",
        formed_at=T,
        absorbed_into_version=3,
    ),
    Reflection(
        reflection_id="r_2",
        scope_key=SESSION,
        content="Debugging",
        source_session_id="s1",
        formed_at=T,
    ),
]
BLOB = ConsolidatedMemory(
    scope_key=USER,
    content="Likes examples.",
    version=3,
    word_limit=300,
    updated_at=T,
    edited_by="manual",
)
MESSAGE = StoredMessage(
    session_id="s1",
    seq=1,
    message_id="m1",
    role="user",
    content="hi",
    created_at=T,
    user_id="alice",
    agent_id="eve",
)


def records() -> list[Record]:
    return [
        AgentLine(**AGENT.model_dump()),
        FactLine(**FACT.model_dump(), embedding=[0.5, -0.5]),
        FactLine(**OLD.model_dump()),
        *(ReflectionLine(**r.model_dump()) for r in REFLECTIONS),
        ConsolidatedLine(**BLOB.model_dump()),
        MessageLine(**MESSAGE.model_dump()),
    ]


def exported() -> str:
    out = io.StringIO()
    header = HeaderLine(exported_at=T, embedding_model=MODEL, messages=True)
    counts = write_export(out, header, records())
    assert counts == {"agent": 1, "fact": 2, "reflection": 2, "consolidated": 1, "message": 1}
    return out.getvalue()


def test_export_then_import_recreates_the_same_memories() -> None:
    text = exported()
    assert text.splitlines()[0].startswith('{"type":"header"')
    batch = to_import(read_export(io.StringIO(text)))
    assert [a.config for a in batch.agents] == [AGENT]
    facts = {f.fact_id: f for f in batch.facts}
    # what the store writes from the import record: the same fact, with its own hash recomputed
    assert fact_of(facts["f_1"], MODEL) == FACT.model_copy(update={"hash": facts["f_1"].hash})
    assert fact_of(facts["f_2"], MODEL).invalidated_by == "f_3"
    assert facts["f_1"].embedding == [0.5, -0.5] and facts["f_1"].embedding_model == MODEL
    assert facts["f_2"].embedding is None and facts["f_2"].embedding_model is None
    assert [reflection_of(r) for r in batch.reflections] == REFLECTIONS
    assert [consolidated_of(b) for b in batch.consolidated] == [BLOB]
    assert [m.message for m in batch.messages] == [MESSAGE]


def test_importing_an_export_twice_yields_the_same_ids() -> None:
    once = to_import(read_export(io.StringIO(exported())))
    twice = to_import(read_export(io.StringIO(exported())))
    assert once == twice


def test_a_truncated_export_is_refused() -> None:
    lines = exported().splitlines(keepends=True)
    with pytest.raises(ExportFormatError, match="truncated"):
        list(read_export(lines[:-1]))
    with pytest.raises(ExportFormatError, match="end line counts"):
        list(read_export(lines[:3] + lines[-1:]))


def test_a_file_that_is_not_an_export_is_refused_on_line_one() -> None:
    with pytest.raises(ExportFormatError, match="line 1: not a mnemos-export v1/v2/v3/v4 header"):
        list(read_export(['{"id": "mem0 item", "memory": "x"}\n']))
    lines = exported().splitlines(keepends=True)
    with pytest.raises(ExportFormatError, match="line 3:"):
        list(read_export([lines[0], lines[1], '{"type": "fact", "content": 1}\n', *lines[2:]]))
