"""A dry run after a forget says of the session memory what the import then does, on every
backend: the memory a forget deleted, with its session or one agent's of a session that stays
for another, is among the drops as "forgotten user" (the import refuses it by the session
tombstones the forget left, rules.erasure.session_tombstones), with or without the session's
messages in the file, and the plan's counts are the import's."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pytest

from memory.lifecycle.dry_run import CONFLICT, FORGOTTEN, THERE, against_store
from memory.lifecycle.export import read_export, to_import
from memory.lifecycle.plan import ImportPlan, plan
from memory.models import AgentConfig
from memory.store.base import MemoryStore
from memory.store.counts import ImportCounts
from memory.store.sqlite import SQLiteStore
from tests.lifecycle.test_import_after_forget import ABSORBED, BUFFERED, _export, _lone_session
from tests.lifecycle.test_import_cli import env_of, mnemos, ok
from tests.lifecycle.test_import_guards import SESSION_KEY, export_lines, import_lines
from tests.store.builders import at, msg, record

Said = tuple[dict[str, int], Counter[str]]  # (records to write by kind, others by reason)


def _said(counts: Mapping[str, ImportCounts], outcomes: Mapping[str, str]) -> Said:
    """What the import did (its counts, its blobs' outcomes), as a dry run's plan says it: the
    records written of each kind, and the others by the reason the plan gives."""
    kinds = {k: counts.get(k, ImportCounts()) for k in ("facts", "reflections", "messages")}
    blobs = Counter(outcomes.values())
    written = {k: c.inserted for k, c in kinds.items()} | {"blobs": blobs["inserted"]}
    reasons = {THERE: "existing", FORGOTTEN: "forgotten", CONFLICT: "conflict"}
    dropped = Counter(
        {reason: sum(getattr(c, field) for c in kinds.values()) + blobs[field]
         for reason, field in reasons.items()}
    )  # fmt: skip
    return written, +dropped


def _planned(p: ImportPlan) -> Said:
    """What a dry run's plan says the import writes, by kind, and drops, by reason."""
    written = {
        "facts": sum(ln.facts for ln in p.lines),
        "reflections": sum(ln.reflections_buffered + ln.reflections_absorbed for ln in p.lines),
        "messages": sum(ln.messages for ln in p.lines),
        "blobs": sum(ln.blobs for ln in p.lines),
    }
    dropped: Counter[str] = Counter()
    for ln in p.lines:
        dropped.update(ln.dropped)
    return written, +dropped


async def _dry_run_then_import(store: MemoryStore, lines: list[str]) -> tuple[Said, Said]:
    """(what the dry run says, what the import then does) of the file."""
    dry = _planned(plan([await against_store(store, to_import(read_export(lines)))]))
    report = await import_lines(store, lines)
    return dry, _said(report.counts, report.blobs)


@pytest.mark.parametrize("messages", [True, False], ids=["with-messages", "without-messages"])
async def test_a_dry_run_after_a_forget_under_one_agent_of_a_session_that_stays(
    store: MemoryStore, messages: bool
) -> None:
    """forget_user(u1, a1) keeps s1 for a2 and deletes a1's memory of it (a blob, two
    reflections): the dry run of a file taken before says they are refused, as the import
    does. Before the fix it counted them to import (3 to import, 1 dropped: the fact)."""
    await _lone_session(store, second_agent=True)
    lines = await (export_lines(store) if messages else _export(store))
    await store.forget_user("u1", agent_id="a1", at=at(300))
    assert await store.get_session("s1") is not None

    dry, real = await _dry_run_then_import(store, lines)

    assert dry == real
    assert real[0]["blobs"] == real[0]["reflections"] == 0
    assert real[1][FORGOTTEN] >= 4  # the fact, the blob, both reflections (and a1's messages)
    assert await store.get_consolidated(SESSION_KEY) is None


@pytest.mark.parametrize("messages", [True, False], ids=["with-messages", "without-messages"])
async def test_a_dry_run_after_a_forget_that_took_the_session_whole(
    store: MemoryStore, messages: bool
) -> None:
    """forget_user(u1, a1) takes s1 whole (u1 and a1 its only people): the dry run says its
    memory, and its messages, are refused, as the import does. Before the fix it counted the
    blob and the reflections to import."""
    await _lone_session(store)
    lines = await (export_lines(store) if messages else _export(store))
    await store.forget_user("u1", agent_id="a1", at=at(300))
    assert await store.get_session("s1") is None

    dry, real = await _dry_run_then_import(store, lines)

    assert dry == real
    assert real[0] == {"facts": 0, "reflections": 0, "messages": 0, "blobs": 0}
    assert real[1] == Counter({FORGOTTEN: 4 + (2 if messages else 0)})


async def test_the_cli_dry_run_of_a_file_after_a_forget_says_what_the_import_does(
    tmp_path: Path,
) -> None:
    """`mnemos import file --dry-run` (the file read in batches, its session people and
    tombstones given to every batch) after `mnemos forget --agent a1` of u1, alone in s1 with
    a1 and a2: a1's session memory among the drops, the counts the import's."""
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    try:
        for agent in ("a1", "a2"):
            await store.upsert_agent(AgentConfig(agent_id=agent, name=agent))
        await record(store, "s1", "a1", [msg("m1", "I was diagnosed with asthma", seconds=1)])
        await record(store, "s1", "a2", [msg("m2", "It is getting better", seconds=2)])
        await store.import_reflections([ABSORBED, BUFFERED])
        await store.commit_consolidation(
            SESSION_KEY, expected_version=0, content="Asthma talk", word_limit=100,
            absorbed_ids=[ABSORBED.reflection_id], at=at(200),
        )  # fmt: skip
    finally:
        await store.close()
    env, out = env_of(tmp_path), tmp_path / "export.jsonl"
    ok(await mnemos(env, "export", "--messages", "-o", str(out)))
    ok(await mnemos(env, "forget", "--agent", "a1", "--user", "u1", "--keep-executions"))

    dry = ok(await mnemos(env, "import", "file", str(out), "--dry-run", "--json")).stdout
    real = json.loads(ok(await mnemos(env, "import", "file", str(out), "--json")).stdout)

    counts = {k: ImportCounts.model_validate(c) for k, c in real["counts"].items()}
    said = _said(counts, real["blobs"])
    assert _planned(ImportPlan.model_validate_json(dry)) == said
    assert said[1][FORGOTTEN] == 4  # a1's blob, its two reflections, u1's message to a1
