"""forget_user, planned: a user's memories of one agent hard-deleted in one transaction, and the
erasure epoch that keeps a formation running meanwhile from writing them again.

Erasure epochs: ``erasures(agent or "*", user)`` counts the user's erasures; a user's effective
epoch for an agent is the sum of both rows. A formation window records it per user of the
window (who spoke in it, or the session's one user) when it is loaded
(FormationCommit.user_epochs); a commit whose users' epochs moved since writes nothing, not
even the cursor: its window is loaded again, without the forgotten user's messages, and the
other users' messages in it are formed then (a group chat's do not go with the user who was
forgotten).

Session tombstones: ``erasures(session scope key, user)``, one for each session scope whose
memory a forget deleted (session_tombstones): an import never brings that memory back, even from
a file without the session's messages (rules.imports).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.formation_commit import FactAdd, FactUpdate, FormationCommit, FormationCommitResult
from memory.ids import content_hash, text_hash
from memory.models import Fact as _Fact
from memory.models import ScopeKey, SessionAgentState
from memory.store.counts import ForgetCounts
from memory.store.rules.lifecycle_writes import (
    DeleteEmbeddings,
    DeleteFacts,
    DeleteReplies,
    DeleteScope,
    DeleteSessions,
    DeleteUserMessages,
    PutErasure,
    SetWithheld,
)
from memory.store.rules.withheld import (
    REPLIES,
    MessageMark,
    holds,
    is_withheld,
    kept_for_others,
    pending_of,
    withhold,
)
from memory.store.rules.writes import (
    BumpScopeVersions,
    MoveCursor,
    Plan,
    PutFact,
    Request,
    Write,
    user_key,
)

ALL_AGENTS = "*"  # the agent key of an erasure for every agent


def effective_epochs(
    agent_id: str, user_ids: Sequence[str], stored: Mapping[tuple[str, str], int]
) -> dict[str, int]:
    """Each user's epoch for the agent: the sum of its stored (agent key, user) epochs, the
    agent's own and the all-agents one."""
    return {u: stored.get((agent_id, u), 0) + stored.get((ALL_AGENTS, u), 0) for u in user_ids}


# ---------------------------------------------------------------- the check at commit


def commit_users(commit: FormationCommit) -> tuple[str, ...]:
    """Every user a commit could write memory for: those of its window, of its ops and reflections."""
    users = set(commit.user_epochs)
    users |= {op.user_id for op in commit.fact_ops if isinstance(op, FactAdd) and op.user_id}
    users |= {r.scope_key.user_id for r in commit.reflections if r.scope_key.user_id}
    return tuple(sorted(users))


def erased_since(commit: FormationCommit, epochs: Mapping[str, int]) -> bool:
    """A user of the commit was forgotten after its window was loaded (a missing epoch is 0)."""
    return any(epochs.get(u, 0) != commit.user_epochs.get(u, 0) for u in commit_users(commit))


def discarded(commit: FormationCommit) -> Plan[FormationCommitResult]:
    """No memory written, not even the cursor: the session went with the user, or its window is
    formed again without the user's messages. The vectors the formation cached go too."""
    return Plan(
        unstored_embeddings(commit, (), discarded=True),
        FormationCommitResult(formation_id=commit.formation_id, discarded_for_erasure=True),
    )


def unstored_embeddings(
    commit: FormationCommit, writes: Sequence[Write], *, discarded: bool = False
) -> tuple[Write, ...]:
    """Drop the cache entries of texts the formation embedded for nothing it keeps: a
    restatement decided NONE, a fact left undecided. Only its own retries needed them, and as no
    fact holds their text, forget_user (which drops the entries of the user's facts' texts) could
    never find them: the vector of a forgotten user's sentence would stay. The texts of its ops
    stay cached even when not written (an add found already stored): a retried commit reads
    them again before it learns it is done. Discarded (no ops written), every entry goes."""
    kept: set[str] = set()
    if not discarded:
        texts = [op.content for op in commit.fact_ops if isinstance(op, FactAdd | FactUpdate)]
        texts += [w.fact.content for w in writes if isinstance(w, PutFact)]
        kept = {text_hash(t) for t in texts}
    dropped = tuple(sorted(set(commit.embedded_text_hashes) - kept))
    return (DeleteEmbeddings(dropped),) if dropped else ()


# ---------------------------------------------------------------- a user's sessions


def session_users(participants: Iterable[str], message_users: Iterable[str | None]) -> set[str]:
    """Everyone a session holds data of: its participants (who spoke with role "user") and every
    user id its messages carry, whatever their role (a message takes a user_id with any role;
    participation, which decides group chat, is left as it is)."""
    return {*participants, *(u for u in message_users if u is not None)}


def alone_in(user_id: str, users: Iterable[str], *, guests: bool) -> bool:
    """The session holds no other person's data: forget takes it whole, export takes it all.
    A guest (SessionInfo.has_guests) is a person, though nobody's user: their words, and the
    agent's replies they heard, are not the user's to take."""
    return not guests and set(users) <= {user_id}


def session_tombstones(
    user_id: str, keys: Iterable[str], epoch: int, at: datetime
) -> tuple[PutErasure, ...]:
    """The erasure rows of the session memory a forget deletes, by scope key (in the agent key
    column: no agent id holds a colon) and user: an import judges by them the session memory
    of a file without the session's messages, which cannot tell who took part
    (rules.imports._gone). Ids only, no content."""
    return tuple(PutErasure(key, user_id, epoch, at, "{}") for key in sorted(keys))


def take_whole(sessions: Sequence[tuple[str, Sequence[str]]]) -> tuple[DeleteSessions, set[str]]:
    """(the write, the scope keys of the session memory it deletes) of sessions taken whole,
    each given with its agents: its messages, every agent's state and session memory, and the
    records of their formations. Also the repair's, of a session a later forget would have
    taken had it found it (rules.repair_parted)."""
    formations = tuple(f"{a}:{sid}:" for sid, agents in sessions for a in agents)
    memory = {ScopeKey.session(a, sid).key for sid, agents in sessions for a in agents}
    return DeleteSessions(tuple(sid for sid, _ in sessions), formations), memory


# ---------------------------------------------------------------- forget_user


def fact_texts(fact: _Fact) -> tuple[str, ...]:
    """Every text a fact held: its content, previous content and history."""
    texts = [fact.content, *(r.content for r in fact.history)]
    if fact.previous_content is not None:
        texts.append(fact.previous_content)
    return tuple(dict.fromkeys(texts))


def cache_candidates(facts: Sequence[_Fact]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(embedding-cache text hashes, fact content hashes) of every text the facts held."""
    texts = [t for fact in facts for t in fact_texts(fact)]
    return (
        tuple(dict.fromkeys(text_hash(t) for t in texts)),
        tuple(dict.fromkeys(content_hash(t) for t in texts)),
    )


@dataclass(frozen=True)
class UserSession:
    """A session holding the user's data (participation or a message carrying their id), as
    forget_user needs it."""

    session_id: str
    user_ids: tuple[str, ...]  # session_users: the participants and the messages' user ids
    agent_ids: tuple[str, ...]
    messages: int  # all of the session's messages
    user_messages: int  # the user's own
    # Each agent's state, and (count, weighted tokens) of the messages after its cursor that
    # are neither the user's nor withheld from it: its pending counters but the user's kept.
    states: tuple[tuple[SessionAgentState, int, float], ...]
    last_seq: int = 0
    marks: tuple[MessageMark, ...] = ()  # the user's messages, which other agents may hold
    guests: bool = False  # a guest spoke in it (SessionInfo.has_guests): not the user's alone
    # Its messages carrying no user id (the agents' replies): in a session the user was alone
    # in, the agents' side of the user's conversation.
    replies: tuple[MessageMark, ...] = ()


@dataclass(frozen=True)
class ForgetSnapshot:
    epoch: int  # of (agent, user), before the call
    facts: Sequence[_Fact]  # the agent's facts of the user, valid or not
    reflections: int  # of the scope user:agent:user, buffered or absorbed
    blob: bool
    sessions: Sequence[UserSession]  # with the agent among their agents
    cached: frozenset[str]  # cache_candidates' text hashes present in the cache (any model)
    in_use: frozenset[str]  # of those, texts that a fact which stays still holds as content


@dataclass(frozen=True)
class ForgetRequest(Request[ForgetSnapshot]):
    agent_id: str
    user_id: str
    all_agents: bool  # sessions of other agents too go whole when the user was their only user

    def serialized_on(self) -> tuple[str, ...]:
        # The tombstone must meet any commit that checked the user's epoch before it.
        return (user_key(self.user_id),)


@dataclass(frozen=True)
class EraseAllRequest(Request[int]):
    """The stored epoch of ("*", user)."""

    user_id: str

    def serialized_on(self) -> tuple[str, ...]:
        # As ForgetRequest: the every-agent tombstone is one user's.
        return (user_key(self.user_id),)


def plan_erase_all(user_id: str, epoch: int, at: datetime) -> Plan[int]:
    """The tombstone for every agent, written before the agents' own transactions."""
    new = epoch + 1
    return Plan((PutErasure(ALL_AGENTS, user_id, new, at, "{}"),), new)


def plan_forget(
    req: ForgetRequest, snapshot: ForgetSnapshot, *, at: datetime
) -> Plan[ForgetCounts]:
    agent_id, user_id = req.agent_id, req.user_id
    user_key = ScopeKey(scope="user", agent_id=agent_id, user_id=user_id).key
    writes: list[Write] = []
    if snapshot.facts:
        writes.append(DeleteFacts(agent_id, tuple(f.fact_id for f in snapshot.facts)))
    writes.append(DeleteScope(user_key))
    alone = [s for s in snapshot.sessions if alone_in(user_id, s.user_ids, guests=s.guests)]
    whole = [s for s in alone if req.all_agents or s.agent_ids == (agent_id,) or _emptied(req, s)]
    sessions_memory: set[str] = set()  # the scope keys of the session memory deleted
    if whole:
        taken, memory = take_whole([(s.session_id, s.agent_ids) for s in whole])
        writes.append(taken)
        sessions_memory |= memory
    # A session the user was alone in that stays for another agent: this agent's memory of it
    # was formed of the user's words only, and goes with them.
    for s in alone:
        if s not in whole and agent_id in s.agent_ids:
            session_key = ScopeKey.session(agent_id, s.session_id).key
            writes.append(DeleteScope(session_key))
            sessions_memory.add(session_key)
    keys = {user_key, *sessions_memory}
    messages = sum(s.messages for s in whole)
    for s in snapshot.sessions:
        if s in whole or (user_id not in s.user_ids and not s.user_messages):
            continue
        deleted, user_writes = _user_messages(req, s, parted=s in alone)
        messages += deleted
        writes += user_writes
        if s in alone and (replies := _replies_gone(req, s)):
            writes.append(DeleteReplies(s.session_id, replies))
            messages += len(replies)
    dropped = tuple(sorted(snapshot.cached - snapshot.in_use))
    if dropped:
        writes.append(DeleteEmbeddings(dropped))
    writes.append(BumpScopeVersions(tuple(sorted(keys))))
    counts = ForgetCounts(
        agent_id=agent_id,
        user_id=user_id,
        epoch=snapshot.epoch + 1,
        facts=len(snapshot.facts),
        reflections=snapshot.reflections,
        blobs=int(snapshot.blob),
        messages=messages,
        sessions=len(whole),
        embedding_cache=len(dropped),
        session_scopes=tuple(sorted(sessions_memory)),
    )
    tombstone = PutErasure(agent_id, user_id, counts.epoch, at, counts.model_dump_json())
    sessions = session_tombstones(user_id, sessions_memory, counts.epoch, at)
    return Plan((tombstone, *sessions, *writes), counts)


def _replies_gone(req: ForgetRequest, s: UserSession) -> tuple[int, ...]:
    """The seqs of the replies in a session the user was alone in that stays for another
    agent: the agents' side of the user's conversation (an answer quoting what the user told
    it), which goes with the user unless another agent still holds it, by the rule of the
    user's own messages (rules.withheld.holds: its own record, or one it has not formed yet,
    and not withheld from it by its own forget of the user)."""
    others = [st for st, *_ in s.states if st.agent_id != req.agent_id]
    gone = [m for m in s.replies if not any(holds(o, req.user_id, m) for o in others)]
    return tuple(m.seq for m in gone)


def _emptied(req: ForgetRequest, s: UserSession) -> bool:
    """Whether the forget under one agent is the last of a session the user was alone in: every
    other agent forgot the user before (its withheld bound covers the session's head), and
    every message goes (the user's, the agents' replies, none held by another agent). Then the
    user was its last person and it goes whole, with every agent's state and memory of it (h218
    D2: a forget under each agent in turn left the agents' replies in a session of no user,
    which neither an export of the user nor a forget under every agent found again). Not while
    another agent has not forgotten the user: its memory of the session is its own (A's forget
    is not B's), and the session it was formed of stays with it."""
    others = [st for st, *_ in s.states if st.agent_id != req.agent_id]
    if req.agent_id not in s.agent_ids or not all(
        is_withheld(req.user_id, s.last_seq, o.withheld) for o in others
    ):
        return False
    if kept_for_others(req.user_id, req.agent_id, others, s.marks):
        return False
    return s.messages == s.user_messages + len(_replies_gone(req, s))


def _user_messages(req: ForgetRequest, s: UserSession, *, parted: bool) -> tuple[int, list[Write]]:
    """(how many go, the writes) of the user's messages in a session that stays. For every
    agent, all of them; for one agent, those no other agent of the session holds: the rest are
    kept for them, withheld from this agent (rules.withheld). Each agent's pending recounted.

    ``parted``: the user was the session's only person, and it stays for another agent. What
    is left of it for this agent to form is the agents' side of the user's conversation (its
    replies, another agent's answer quoting what the user told it), which would form the user's
    memory again, the session memory this forget deleted among it: its cursor goes to the
    session's head, nothing before it this agent's to form (h218 D3). Another agent's own
    cursor and pending stay: what it has to form it still forms."""
    user_id, agent_id = req.user_id, req.agent_id
    kept = (
        ()
        if req.all_agents
        else kept_for_others(user_id, agent_id, (st for st, *_ in s.states), s.marks)
    )
    # A session the user was alone in that stays for another agent keeps the user among its
    # users, and this agent's bound at its head: another agent's later forget finds the session
    # there (its replies quote the user) and, the last one, sees every other agent done with
    # it (_emptied). Without the user, it stayed beyond every forget and export (h229 D1).
    keep_user = parted and not req.all_agents
    if not kept and not keep_user:
        writes: list[Write] = [DeleteUserMessages(s.session_id, user_id)]
    else:
        held = {m.seq for m in kept}
        gone = tuple(m.seq for m in s.marks if m.seq not in held)
        writes = [DeleteUserMessages(s.session_id, user_id, seqs=gone, agents=(agent_id,))]
    for state, pending, tokens in s.states:
        withheld = state.withheld
        if (kept or keep_user) and state.agent_id == agent_id:
            # Up to the session's head: each of the user's messages is deleted or withheld; in
            # a session the user was alone in, so is each reply (what another agent keeps of
            # its side of the conversation is no longer this agent's to form or show).
            withheld = withhold(withheld, user_id, max(s.last_seq, 0, *(m.seq for m in kept)))
            if keep_user and s.messages == s.user_messages + len(s.replies):
                # Not where a message is neither the user's nor a reply: a guest's words an
                # older process recorded unmarked (alone_in saw no guest) stay this agent's.
                withheld = withhold(withheld, REPLIES, s.last_seq)
            writes.append(SetWithheld(s.session_id, agent_id, tuple(sorted(withheld.items()))))
        after = pending_of(state, (pending, tokens), user_id, kept, withheld)
        if parted and state.agent_id == agent_id:
            head = max(after.cursor_seq, s.last_seq)
            update = {"cursor_seq": head, "pending_messages": 0, "pending_weighted_tokens": 0.0}
            after = after.model_copy(update=update)
        writes.append(MoveCursor(after))
    return s.user_messages - len(kept), writes
