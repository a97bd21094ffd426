"""Contract: the lasting record of degraded windows (memory/degraded.py), on every backend. What
`mnemos degraded list` shows however long ago the window degraded, once per window whatever the
retries, until re-formed; gone with the session forget_user deletes. Recorded as the product
does: by the formation commit that carries them (FormationCommit.degraded)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

import pytest

from memory.degraded import ERASED_REASON, FACT_STEPS, DegradedWindow
from memory.deps import Deps
from memory.errors import ConflictError
from memory.formation_commit import FormationCommit, FormationCommitResult
from memory.llm.heuristic import HeuristicProvider
from memory.model_check import CheckReport, form_session
from memory.models import AgentConfig
from memory.reform import reform
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.store.builders import Former, at, commit, msg, record, session_with_messages
from tests.store.test_reform import T0, ReadsNoTokens, said


def window(
    after: int,
    step: str = "extract_facts",
    *,
    upto: int | None = None,
    seconds: float = 200,
    reason: str = "output hit the token limit",
    session_id: str = "s1",
    agent_id: str = "a1",
) -> DegradedWindow:
    return DegradedWindow(
        agent_id=agent_id, session_id=session_id, after_seq=after,
        upto_seq=after + 1 if upto is None else upto, step=step, reason=reason,
        formation_id=f"{agent_id}:{session_id}:{after}", degraded_at=at(seconds),
    )  # fmt: skip


def keys(found: list[DegradedWindow]) -> list[tuple[str, int, int, str]]:
    return [(w.session_id, w.after_seq, w.upto_seq, w.step) for w in found]


def with_degraded(formation: FormationCommit, *windows: DegradedWindow) -> FormationCommit:
    """The commit carrying the window's degraded steps, as FormMemories' commit activity does."""
    return formation.model_copy(update={"degraded": list(windows)})


async def formed(
    store: MemoryStore,
    session_id: str,
    messages: int,
    agent_id: str = "a1",
    *,
    degraded: Sequence[DegradedWindow] = (),
) -> FormationCommit:
    """The session with ``messages`` messages (u1 and u2 in turn), formed in one commit that
    records ``degraded``."""
    await session_with_messages(store, session_id, agent_id, messages)
    done = with_degraded(
        commit(session_id=session_id, agent_id=agent_id, new_cursor=messages), *degraded
    )
    assert not (await store.commit_formation(done)).already_committed
    return done


class _RecordsDegraded:
    """A store whose formation commits carry the given degraded windows, each in the commit that
    forms its last message and under that commit's formation id (as FormMemories' commit carries
    its window's); for the tests forming a session with form_session, whose commits carry none."""

    def __init__(self, store: MemoryStore, windows: Sequence[DegradedWindow]) -> None:
        self._store = store
        self._windows = list(windows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def commit_formation(self, formation: FormationCommit) -> FormationCommitResult:
        mine = [
            w.model_copy(update={"formation_id": formation.formation_id})
            for w in self._windows
            if (w.agent_id, w.session_id) == (formation.agent_id, formation.session_id)
            and formation.expected_cursor < w.upto_seq <= formation.new_cursor
        ]
        return await self._store.commit_formation(with_degraded(formation, *mine))


def recording(store: MemoryStore, *windows: DegradedWindow) -> MemoryStore:
    """``store``, its formation commits recording ``windows`` (see _RecordsDegraded)."""
    return cast(MemoryStore, _RecordsDegraded(store, windows))


async def test_a_committed_windows_steps_are_recorded_once_whatever_the_retries(
    store: MemoryStore,
) -> None:
    """Once per key: a key twice in a commit is recorded once, and a retried commit (another
    time and reason, the same windows) is already committed and records nothing."""
    first = [window(0), window(1), window(0, "decide_fact_changes", upto=2)]
    done = await formed(
        store, "s1", 2, degraded=[*first, first[0].model_copy(update={"reason": "x"})]
    )

    retried = [w.model_copy(update={"degraded_at": at(300), "reason": "x"}) for w in first]
    assert (await store.commit_formation(with_degraded(done, *retried))).already_committed

    found = await store.list_degraded(agent_id="a1", session_id="s1")
    assert sorted(keys(found)) == [
        ("s1", 0, 1, "extract_facts"),
        ("s1", 0, 2, "decide_fact_changes"),
        ("s1", 1, 2, "extract_facts"),
    ]
    assert {(w.reason, w.degraded_at, w.reformed_at) for w in found} == {
        ("output hit the token limit", at(200), None)
    }
    assert {w.formation_id for w in found} == {"a1:s1:0", "a1:s1:1"}


async def test_the_reason_is_kept_short(store: MemoryStore) -> None:
    await formed(store, "s1", 1, degraded=[window(0, reason="y" * 1000)])
    [found] = await store.list_degraded()
    assert found.reason == "y" * 300


async def test_a_commit_that_writes_nothing_records_none_of_its_windows(
    store: MemoryStore,
) -> None:
    """A commit of s1's (0, 2] after (0, 1] was committed (the cursor moved on) is refused; s9's
    window was read before forget_user deleted s9 whole (u1 alone in it): its commit is
    discarded. Neither records its degraded windows; the commit of (1, 2] does."""
    former = await Former(store, "s1", "a1").start(2)
    await former.form()
    stale = with_degraded(commit(new_cursor=2), window(0), window(1))
    with pytest.raises(ConflictError):
        await store.commit_formation(stale)
    await store.commit_formation(with_degraded(former.next_commit(), window(1)))
    await record(store, "s9", "a1", [msg("s9-m1")])
    await store.forget_user("u1", agent_id="a1", at=at(300))
    gone = commit(session_id="s9").model_copy(update={"user_epochs": {"u1": 0}})

    assert (
        await store.commit_formation(with_degraded(gone, window(0, session_id="s9")))
    ).discarded_for_erasure
    assert keys(await store.list_degraded()) == [("s1", 1, 2, "extract_facts")]


async def test_listed_newest_first_by_agent_and_session(store: MemoryStore) -> None:
    await formed(store, "s1", 2, degraded=[window(0, seconds=200), window(1, seconds=210)])
    await formed(store, "s2", 1, degraded=[window(0, session_id="s2", seconds=220)])
    # a2 joins s1 at its head and forms what is said after: seq 3.
    await record(store, "s1", "a2", [msg("s1-a2", seconds=5)])
    late = Former(store, "s1", "a2")
    late.cursor = 2
    await store.commit_formation(
        with_degraded(late.next_commit(), window(2, agent_id="a2", seconds=230))
    )

    assert keys(await store.list_degraded()) == [
        ("s1", 2, 3, "extract_facts"),
        ("s2", 0, 1, "extract_facts"),
        ("s1", 1, 2, "extract_facts"),
        ("s1", 0, 1, "extract_facts"),
    ]
    assert keys(await store.list_degraded(limit=2)) == keys(await store.list_degraded())[:2]
    assert keys(await store.list_degraded(agent_id="a1", session_id="s1")) == [
        ("s1", 1, 2, "extract_facts"),
        ("s1", 0, 1, "extract_facts"),
    ]
    assert [w.agent_id for w in await store.list_degraded(session_id="s1")] == ["a2", "a1", "a1"]
    assert keys(await store.list_degraded(agent_id="a1", session_id="s2")) == [
        ("s2", 0, 1, "extract_facts")
    ]
    assert await store.list_degraded(limit=0) == []


async def test_a_reform_marks_the_records_of_its_steps_within_its_range(
    store: MemoryStore,
) -> None:
    await formed(
        store,
        "s1",
        2,
        degraded=[
            window(0),
            window(1),
            window(0, "decide_fact_changes", upto=2),
            window(0, "extract_reflections"),
        ],
    )

    # Messages 1-1 re-formed, its reflections not: neither the decision of 1-2 nor the
    # reflections of 1-1 were formed again.
    assert await store.mark_reformed("a1", "s1", 0, 1, steps=FACT_STEPS, at=at(400)) == 1
    assert sorted(keys(await store.list_degraded())) == [
        ("s1", 0, 1, "extract_reflections"),
        ("s1", 0, 2, "decide_fact_changes"),
        ("s1", 1, 2, "extract_facts"),
    ]
    assert await store.mark_reformed("a1", "s1", 0, 2, steps=FACT_STEPS, at=at(500)) == 2
    assert keys(await store.list_degraded()) == [("s1", 0, 1, "extract_reflections")]

    every = await store.list_degraded(include_reformed=True)
    assert {(w.after_seq, w.step): w.reformed_at for w in every} == {
        (0, "extract_facts"): at(400),  # the first re-form's date stays
        (1, "extract_facts"): at(500),
        (0, "decide_fact_changes"): at(500),
        (0, "extract_reflections"): None,
    }
    assert await store.mark_reformed("a2", "s1", 0, 2, steps=FACT_STEPS, at=at(600)) == 0


async def test_forget_deletes_the_degraded_windows_of_a_session_it_deletes_whole(
    store: MemoryStore,
) -> None:
    """s3 (u1 alone) goes whole with its windows, whose reasons may quote the model's output
    about u1; s1 (u1 and u2) stays, and so do its windows, to be re-formed, but not their
    reasons."""
    quoted = "could not parse: 'u1 says they were diagnosed with asthma'"
    await formed(store, "s1", 2, degraded=[window(1, reason=quoted)])
    await formed(store, "s3", 1, degraded=[window(0, session_id="s3", reason=quoted)])
    s4 = window(0, session_id="s4", agent_id="a2", reason=quoted)  # another agent's, without u1
    await formed(store, "s4", 1, agent_id="a2", degraded=[s4])

    await store.forget_user("u1", agent_id="a1", at=at(300))

    left = await store.list_degraded(include_reformed=True)
    assert sorted(keys(left)) == [("s1", 1, 2, "extract_facts"), ("s4", 0, 1, "extract_facts")]
    assert {w.session_id: w.reason for w in left} == {"s1": ERASED_REASON, "s4": quoted}


async def test_a_reform_marks_the_parts_it_formed_again(store: MemoryStore) -> None:
    """Messages 1-4 re-formed, message 2 still unreadable: the records of what was formed again
    are marked, those of message 2 (and of a window holding it) stay listed."""
    embedder = WordHashEmbedder()
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    texts = ["My locker code is 4411.", "TOKEN", "My email is kay@example.com.", "I live in Oslo."]
    await store.record_messages(
        "s1", "eve", [said(i, t) for i, t in enumerate(texts)], weights={"user": 1.0},
        chars_per_token=4.0, now=T0,
    )  # fmt: skip
    deps = Deps(settings=Settings(), store=store, llm=ReadsNoTokens(), embedder=embedder)
    windows = [
        window(0, agent_id="eve"),
        window(1, agent_id="eve"),
        window(2, "decide_fact_changes", upto=4, agent_id="eve"),
        window(0, "decide_fact_changes", upto=2, agent_id="eve"),
    ]
    await form_session(replace(deps, store=recording(store, *windows)), "eve", "s1", CheckReport())
    assert sorted(keys(await store.list_degraded())) == sorted(keys(windows))

    again = await reform(deps, "eve", "s1", 0, 4)

    assert [(s.after_seq, s.upto_seq) for s in again.still_degraded] == [(1, 2)]
    assert again.marked == 2
    assert sorted(keys(await store.list_degraded())) == [
        ("s1", 0, 2, "decide_fact_changes"),
        ("s1", 1, 2, "extract_facts"),
    ]


async def test_a_commit_records_its_degraded_steps_in_its_own_transaction(
    store: MemoryStore,
) -> None:
    """Recorded with the window's memories: once whatever the retries, never by a commit
    discarded for an erasure, and there for a forget_user landing after the commit to erase."""
    former = await Former(store, "s1", "a1").start(2)  # u1 says seq 1, u2 seq 2
    quoted = "could not parse: 'u1 says they were diagnosed with asthma'"
    first = former.next_commit().model_copy(
        update={"degraded": [window(0, reason=quoted)], "user_epochs": {"u1": 0}}
    )
    assert not (await store.commit_formation(first)).already_committed
    assert [w.reason for w in await store.list_degraded()] == [quoted]
    retried = first.model_copy(update={"degraded": [window(0, reason="x", seconds=300)]})
    assert (await store.commit_formation(retried)).already_committed
    assert [(w.reason, w.degraded_at) for w in await store.list_degraded()] == [(quoted, at(200))]

    await store.forget_user("u1", agent_id="a1", at=at(400))  # s1 stays: u2 is in it
    assert [w.reason for w in await store.list_degraded()] == [ERASED_REASON]
    former.cursor = 1
    late = former.next_commit().model_copy(
        update={"degraded": [window(1, reason=quoted)], "user_epochs": {"u1": 0, "u2": 0}}
    )
    assert (await store.commit_formation(late)).discarded_for_erasure
    assert keys(await store.list_degraded()) == [("s1", 0, 1, "extract_facts")]


class _ForgetsBeforeCommit:
    """A store on which forget_user(kay) lands just before the first commit (a re-form's)."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self.forgot = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def commit_formation(self, commit: FormationCommit) -> FormationCommitResult:
        if not self.forgot:
            self.forgot = True
            await self._store.forget_user("kay", agent_id="eve", at=T0)
        return await self._store.commit_formation(commit)


async def test_a_reform_that_wrote_nothing_marks_nothing(store: MemoryStore) -> None:
    """Kay is forgotten while her and Lee's window is re-formed: the commit writes nothing (an
    erasure since the re-form read the epochs), so Lee's message is not formed again and the
    window stays listed, to be re-formed."""
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    lee = said(1, "I live in Oslo.").model_copy(update={"user_id": "lee"})
    await store.record_messages(
        "s1", "eve", [said(0, "My locker code is 4411."), lee], weights={"user": 1.0},
        chars_per_token=4.0, now=T0,
    )  # fmt: skip
    deps = Deps(
        settings=Settings(), store=store, llm=HeuristicProvider(), embedder=WordHashEmbedder()
    )
    degraded = window(0, upto=2, agent_id="eve")
    await form_session(replace(deps, store=recording(store, degraded)), "eve", "s1", CheckReport())
    assert keys(await store.list_degraded()) == keys([degraded])
    proxy = _ForgetsBeforeCommit(store)
    before = await store.get_session_agent_state("s1", "eve")

    again = await reform(replace(deps, store=proxy), "eve", "s1", 0, 2)  # type: ignore[arg-type]

    assert proxy.forgot
    assert await store.get_session_agent_state("s1", "eve") == before  # the commit was discarded
    assert again.marked == 0
    assert keys(await store.list_degraded()) == [("s1", 0, 2, "extract_facts")]
