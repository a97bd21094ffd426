"""The snapshots of the data-lifecycle planners (imports, forget_user; memory.store.rules.imports
and .erasure), assembled once from the reads each backend answers (``LifecycleReads``): which
sessions a forget touches, what stays pending once a user's messages go, which cached vectors
another fact still needs. See memory.store.snapshots for the formation side."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory.ids import text_hash
from memory.models import AgentConfig, ConsolidatedMemory, Fact, Reflection, SessionAgentState
from memory.store.rules import Request
from memory.store.rules import erasure as er
from memory.store.rules import import_erasures as ie
from memory.store.rules import import_sessions as rs
from memory.store.rules import imports as ri
from memory.store.rules import repair_parted as rp
from memory.store.rules import withheld as wh
from memory.store.snapshots_erased import Head, erased_scopes, gone_sessions, pair_epochs
from memory.switch_marks import switches


class LifecycleReads(abc.ABC):
    """The reads both snapshot assemblies share, and those only the lifecycle ones need."""

    @abc.abstractmethod
    async def embedding_meta(self) -> tuple[str, int] | None: ...

    @abc.abstractmethod
    async def erasure_rows(
        self, agent_keys: Sequence[str], user_ids: Sequence[str] | None = None
    ) -> dict[tuple[str, str], ie.Mark]:
        """The stored epoch and time of the erasure rows (agent key, user) among those given:
        of every user without ``user_ids``."""

    async def epochs(
        self, agent_id: str, user_ids: Sequence[str], known: ie.Known = ()
    ) -> dict[str, int]:
        """Each user's effective erasure epoch for the agent (rules.erasure), of the tombstones
        an imported file does not know of (``known``: the file's, rules.import_erasures)."""
        stored = await self.erasure_rows([agent_id, er.ALL_AGENTS], user_ids)
        return er.effective_epochs(agent_id, user_ids, ie.unknown(stored, known))

    async def stored_epoch(self, agent_key: str, user_id: str) -> int:
        """The epoch of one erasure row (agent or ALL_AGENTS), 0 without one."""
        rows = ie.epochs_of(await self.erasure_rows([agent_key], [user_id]))
        return rows.get((agent_key, user_id), 0)

    @abc.abstractmethod
    async def agents(self, agent_ids: Sequence[str] | None) -> list[AgentConfig]:
        """The registered agents among ``agent_ids`` (None: every one), in any order."""

    async def agent_switches(self, agent_ids: Sequence[str]) -> dict[str, tuple[bool, bool]]:
        """The memory switches of each registered agent among ``agent_ids``."""
        return {a.agent_id: switches(a) for a in await self.agents(agent_ids)}

    async def existing_agents(self, agent_ids: Sequence[str]) -> frozenset[str]:
        return frozenset(a.agent_id for a in await self.agents(agent_ids))

    @abc.abstractmethod
    async def facts_by_id(self, fact_ids: Sequence[str]) -> list[Fact]:
        """The facts that exist among ``fact_ids``, valid or not."""

    @abc.abstractmethod
    async def facts_with_hashes(self, agent_id: str, hashes: Sequence[str]) -> list[Fact]:
        """The agent's facts, valid or not, whose content hash is one of ``hashes``."""

    async def existing_facts(self, fact_ids: Sequence[str]) -> frozenset[str]:
        return frozenset(fact.fact_id for fact in await self.facts_by_id(fact_ids))

    @abc.abstractmethod
    async def reflections(self, reflection_ids: Sequence[str]) -> list[Reflection]:
        """The reflections that exist among ``reflection_ids``, absorbed or not."""

    async def existing_reflections(self, reflection_ids: Sequence[str]) -> frozenset[str]:
        return frozenset(r.reflection_id for r in await self.reflections(reflection_ids))

    async def valid_fact_keys(self, agent_id: str, hash_: str) -> set[tuple[str, str, str, str]]:
        """(agent, user or "", scope, hash) of the agent's valid facts with this content hash."""
        facts = await self.facts_with_hashes(agent_id, [hash_])
        return {ri.dedup_key(fact) for fact in facts if fact.invalidated_at is None}

    @abc.abstractmethod
    async def _buffered_counts(self, keys: Sequence[str]) -> dict[str, int]:
        """Unabsorbed reflections per scope key among ``keys`` (distinct); none: absent."""

    async def buffered_counts(self, keys: Sequence[str]) -> dict[str, int]:
        """Unabsorbed reflections per scope key, 0 for a key without any."""
        return dict.fromkeys(keys, 0) | await self._buffered_counts(list(dict.fromkeys(keys)))

    @abc.abstractmethod
    async def blobs(self, keys: Sequence[str]) -> dict[str, ConsolidatedMemory]:
        """The consolidated blobs of these scope keys, by key."""

    @abc.abstractmethod
    async def session_head(self, session_id: str) -> Head | None:
        """The session's own row, None when there is no such session."""

    @abc.abstractmethod
    async def session_users(self, session_id: str) -> tuple[str, ...]:
        """The session's users, in join order."""

    @abc.abstractmethod
    async def session_states(self, session_id: str) -> list[SessionAgentState]:
        """The state of each agent of the session, in join order."""

    async def session_tombstones(self, keys: Sequence[str]) -> list[rp.Tombstone]:
        """The erasure rows of these session scope keys, whoever their user
        (rules.erasure.session_tombstones)."""
        rows = await self.erasure_rows(keys) if keys else {}
        return [rp.Tombstone(key, user, at) for (key, user), (_, at) in rows.items()]

    @abc.abstractmethod
    async def parted_candidates(self) -> dict[str, datetime]:
        """The created_at of each session holding messages but no user and no guest that a
        session tombstone of one of its agents names (rules.repair_parted): one read the
        database answers, at every start. Of its agents' only, as parted_session reads them
        (rp.session_keys): a session named by no tombstone of theirs has none to decide on
        (rp.forgotten), so it is no repair's."""

    @abc.abstractmethod
    async def pending_after(
        self, session_id: str, seq: int, *, withheld: Sequence[tuple[str, int]] = ()
    ) -> tuple[int, float]:
        """(count, weighted tokens) of the session's messages with a seq above ``seq``, but,
        for each (user, bound) of ``withheld``, the user's up to that seq
        (rules.withheld.bounds_after)."""

    @abc.abstractmethod
    async def session_messages(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        seqs: Sequence[int] | None = None,
        of_user: str | None = None,
    ) -> list[wh.MessageMark]:
        """The session's messages, in seq order, without their content: those with these ids,
        these seqs, those carrying ``of_user``'s id or none, or (nothing given) every one.
        An import and a forget ask for what they decide on only: either may touch a session of
        100k messages, and reads in the transaction every recording waits on (r246). The
        start-up repair's sessions have no people: it reads every message, and its views are
        taken here, not read by every backend."""

    @abc.abstractmethod
    async def message_users(self, session_id: str) -> list[str]:
        """The distinct user ids the session's messages carry, whatever their role."""

    @abc.abstractmethod
    async def user_session_ids(self, user_id: str, agent_id: str) -> list[str]:
        """The sessions of the agent holding the user's data: those the user is a user of, and
        those with a message carrying the user's id (whatever its role)."""

    @abc.abstractmethod
    async def user_facts(self, agent_id: str, user_id: str) -> list[Fact]:
        """The agent's facts of the user, valid or not."""

    @abc.abstractmethod
    async def reflection_count(self, key: str) -> int:
        """The reflections of a scope key, absorbed or not."""

    async def has_blob(self, key: str) -> bool:
        return key in await self.blobs([key])

    @abc.abstractmethod
    async def cached_text_hashes(self, text_hashes: Sequence[str]) -> frozenset[str]:
        """The embedding-cache entries (of any model) among ``text_hashes``."""

    @abc.abstractmethod
    async def contents_elsewhere(
        self, agent_id: str, user_id: str, content_hashes: Sequence[str]
    ) -> list[str]:
        """The contents of the facts with these hashes but the agent's facts of the user."""


async def _facts(reads: LifecycleReads, req: ri.FactImportRequest) -> ri.FactImportSnapshot:
    valid: set[tuple[str, str, str, str]] = set()
    for agent_id, hash_ in req.hashes:
        valid |= await reads.valid_fact_keys(agent_id, hash_)
    return ri.FactImportSnapshot(
        await reads.existing_facts(req.fact_ids), frozenset(valid), await reads.embedding_meta(),
        await pair_epochs(reads, req.pairs, req.known),
    )  # fmt: skip


async def _session(reads: LifecycleReads, req: rs.SessionImportRequest) -> rs.SessionImportSnapshot:
    sid = req.session_id
    head = await reads.session_head(sid)
    users = await reads.session_users(sid)
    states = await reads.session_states(sid)
    # Every agent and user of the session, stored or imported: a forgotten user's messages are
    # deleted from every session of the agent, whichever agent recorded them (rules.imports).
    agents = tuple(dict.fromkeys((*(s.agent_id for s in states), *req.agent_ids)))
    everyone = tuple(dict.fromkeys((*users, *req.user_ids)))
    if not everyone:
        epochs: dict[ri.Pair, int] = {}
    elif agents:
        epochs = await pair_epochs(reads, [(a, u) for a in agents for u in everyone], req.known)
    else:
        epochs = ie.unknown(await reads.erasure_rows([er.ALL_AGENTS], everyone), req.known)
    stored = await reads.session_messages(sid, ids=req.message_ids)
    return rs.SessionImportSnapshot(
        exists=head is not None,
        last_seq=0 if head is None else head.last_seq,
        last_message_at=None if head is None else head.last_message_at,
        user_ids=users,
        states={s.agent_id: s for s in states},
        stored={m.message_id: m.seq for m in stored},
        stored_all=await reads.pending_after(sid, 0),  # seqs start at 1: every message
        taken=frozenset(m.seq for m in await reads.session_messages(sid, seqs=req.seqs)),
        epochs=epochs,
        guests=head is not None and head.guests,
    )


def _replies(messages: Sequence[wh.MessageMark]) -> list[wh.MessageMark]:
    """The messages carrying no user id but a guest's (rules.derived.said_by_guest: role
    "user"), the agents' replies. Not the guest's: a session recorded by an older process may
    hold a guest's words unmarked."""
    return [m for m in messages if m.user_id is None and m.role != "user"]


async def _user_sessions(reads: LifecycleReads, req: er.ForgetRequest) -> list[er.UserSession]:
    """The sessions a forget touches, each with the user's messages (which of them another agent
    holds is the planner's) and what stays pending of the others' once the user's go."""
    sessions = []
    for sid in await reads.user_session_ids(req.user_id, req.agent_id):
        states = await reads.session_states(sid)
        head = await reads.session_head(sid)
        last_seq = 0 if head is None else head.last_seq
        theirs = await reads.session_messages(sid, of_user=req.user_id)
        marks = tuple(m for m in theirs if m.user_id == req.user_id)
        said_by = await reads.message_users(sid)
        pending = []
        for s in states:
            # The user's messages left out as if withheld up to the head: every one of them.
            without = (*wh.bounds_after(s.withheld, s.cursor_seq), (req.user_id, last_seq))
            pending.append((s, *await reads.pending_after(sid, s.cursor_seq, withheld=without)))
        sessions.append(
            er.UserSession(
                session_id=sid,
                user_ids=tuple(sorted(er.session_users(await reads.session_users(sid), said_by))),
                agent_ids=tuple(s.agent_id for s in states),
                messages=(await reads.pending_after(sid, 0))[0],  # seqs start at 1: every one
                user_messages=len(marks),
                states=tuple(pending),
                last_seq=last_seq,
                marks=marks,
                guests=head is not None and head.guests,
                replies=tuple(_replies(theirs)),
            )
        )
    return sessions


async def _forget(reads: LifecycleReads, req: er.ForgetRequest) -> er.ForgetSnapshot:
    facts = await reads.user_facts(req.agent_id, req.user_id)
    key = f"user:{req.agent_id}:{req.user_id}"
    text_hashes, content_hashes = er.cache_candidates(facts)
    cached = await reads.cached_text_hashes(list(text_hashes))
    # Texts another fact (any agent, any user) still holds as its content keep their entry.
    others = await reads.contents_elsewhere(req.agent_id, req.user_id, list(content_hashes))
    return er.ForgetSnapshot(
        epoch=await reads.stored_epoch(req.agent_id, req.user_id),
        facts=facts,
        reflections=await reads.reflection_count(key),
        blob=await reads.has_blob(key),
        sessions=await _user_sessions(reads, req),
        cached=cached,
        in_use=frozenset(text_hash(content) for content in others) & cached,
    )


async def parted_session(
    reads: LifecycleReads, session_id: str, created_at: datetime
) -> rp.PartedSession | None:
    """What rules.repair_parted decides a session on; None when there is no such session."""
    if (head := await reads.session_head(session_id)) is None:
        return None
    states = await reads.session_states(session_id)
    messages = await reads.session_messages(session_id)
    tombstones = await reads.session_tombstones(rp.session_keys(session_id, states))
    # The later forgets of the tombstones' users (rp.later_forget): under every agent, under each.
    keys = [er.ALL_AGENTS, *(s.agent_id for s in states)]
    forgets = await reads.erasure_rows(keys, sorted({t.user_id for t in tombstones}))
    return rp.PartedSession(
        session_id=session_id,
        created_at=created_at,
        users=await reads.session_users(session_id),
        guests=head.guests,
        last_seq=head.last_seq,
        messages=len(messages),
        replies=len(_replies(messages)),
        states=tuple(states),
        tombstones=tuple(tombstones),
        last_message_at=head.last_message_at,
        forgets=forgets,
    )


async def parted_sessions(reads: LifecycleReads) -> list[rp.PartedRequest]:
    """The repairs rules.repair_parted finds to do, each to decide again in its transaction:
    the sessions without people a session tombstone of their agents names. Found by the
    database, no id passed to it: the tombstones of a store that forgot many users are not
    read into the process at every start (h239 measured 1.75 s at 200k on SQLite), nor does a
    list of every session they name outgrow a MongoDB command or SQLite's bound parameters."""
    found = []
    for session_id, created_at in sorted((await reads.parted_candidates()).items()):
        s = await parted_session(reads, session_id, created_at)
        if s is not None and (forgotten := rp.forgotten(s)) is not None:
            found.append(rp.PartedRequest(session_id, created_at, forgotten[0]))
    return found


async def read_lifecycle_snapshot(reads: LifecycleReads, request: Request[Any]) -> object:
    match request:
        case ri.AgentsRequest(agent_ids=ids):
            return await reads.existing_agents(ids)
        case ri.FactImportRequest():
            return await _facts(reads, request)
        case ri.BlobImportRequest(keys=keys, pairs=pairs, sessions=sessions):
            blobs = {key: (b.content, b.version) for key, b in (await reads.blobs(keys)).items()}
            known = request.known
            epochs = await pair_epochs(reads, pairs, known)
            return ri.BlobImportSnapshot(
                blobs, epochs, await gone_sessions(reads, sessions, known),
                await erased_scopes(reads, request.session_keys, known),
            )  # fmt: skip
        case ri.ReflectionImportRequest(reflection_ids=ids, keys=keys, pairs=pairs):
            return ri.ReflectionImportSnapshot(
                await reads.existing_reflections(ids), await reads.buffered_counts(keys),
                await pair_epochs(reads, pairs, request.known),
                await gone_sessions(reads, request.sessions, request.known),
                await erased_scopes(reads, request.session_keys, request.known),
            )  # fmt: skip
        case rs.SessionImportRequest():
            return await _session(reads, request)
        case er.ForgetRequest():
            return await _forget(reads, request)
        case rp.PartedRequest(session_id=sid, created_at=created_at):
            return await parted_session(reads, sid, created_at)
        case er.EraseAllRequest(user_id=user_id):
            return await reads.stored_epoch(er.ALL_AGENTS, user_id)
        case ie.ErasuresRequest(agent_keys=keys, user_ids=users):
            return await reads.erasure_rows(keys, users)
        case _:
            raise TypeError(f"no snapshot for {request!r}")
