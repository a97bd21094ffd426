"""Eden → mnemos, as the seeds map it (000 §7, 001 "Current → New Mapping", 003 §5.3).

| Eden                                   | mnemos                                                  |
| -------------------------------------- | ------------------------------------------------------- |
| UserMemory blob (agent + user)         | user consolidated blob                                  |
| AgentMemory shards (active)            | one agent blob: merged by consolidation, or concatenated |
| SessionMemory directive                | user reflection (absorbed if the blob already holds it)  |
| SessionMemory suggestion               | agent reflection (likewise)                             |
| SessionMemory fact                     | agent fact (v1 facts were per agent + shard, collective) |
| SessionMemory episode                  | dropped: session-scoped and ephemeral                   |
| memory2 facts / reflections / blobs    | facts / reflections / blobs of the same scope           |
| memory2 session reflections and blobs  | dropped: their sessions' messages are not imported      |

memory2 wins over v1 where both hold the same scope or text (it was migrated from v1).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import ValidationError

from memory.lifecycle.eden_docs import (
    V1_AGENTS,
    V1_SESSIONS,
    V1_USERS,
    V2_CONSOLIDATED,
    V2_FACTS,
    V2_REFLECTIONS,
    AgentMemoryDoc,
    EdenAgentDocs,
    EdenDoc,
    Memory2FactDoc,
)
from memory.lifecycle.records import (
    AgentImport,
    BlobPart,
    ConsolidatedImport,
    Dropped,
    FactImport,
    ImportBatch,
    ReflectionImport,
    SourceRef,
    concatenate,
    dedup_facts,
    dedup_reflections,
    is_id,
)
from memory.models import FactRevision, ScopeKey
from memory.settings import ReflectionSettings

IMPORTED_BLOB_VERSION = 1
# Eden's memory2 facts: "1536-dim vector (text-embedding-3-small)" (seed 002).
EDEN_EMBEDDING_MODEL = "text-embedding-3-small"

EPISODE = "episode: session-scoped and ephemeral, not carried over (seed 000 §7)"
SESSION_SCOPE = "session-scoped: the session's messages are not imported, so it is never shown"
INACTIVE_SHARD = "agent memory shard is inactive"
EMPTY = "empty content"
NO_USER = "directive names no user"
GROUP = "names several users (group session): mnemos keeps no user memory for groups"
BAD_ID = "id is not a valid mnemos id"
SUPERSEDED = "superseded by memory2_consolidated for the same scope"
UNKNOWN_TYPE = "unknown memory_type"
USER_SCOPE_NO_USER = "user scope without user_id"


def ref(collection: str, doc_id: str) -> SourceRef:
    return SourceRef(system="eden", collection=collection, source_id=doc_id)


class _Mapper:
    def __init__(self, docs: EdenAgentDocs, cfg: ReflectionSettings, now: datetime) -> None:
        self.docs = docs
        self.cfg = cfg
        self.now = now
        self.agent = docs.agent_id
        self.facts: list[FactImport] = []
        self.reflections: list[ReflectionImport] = []
        self.blobs: dict[str, ConsolidatedImport] = {}
        self.dropped: list[Dropped] = []
        self.shards = {s.id: s for s in docs.shards}

    def drop(
        self, collection: str, doc: EdenDoc, reason: str, user: str | None = None, detail: str = ""
    ) -> None:
        self.dropped.append(
            Dropped(
                source=ref(collection, doc.id),
                agent_id=self.agent,
                user_id=user,
                reason=reason,
                detail=detail,
            )
        )

    def when(self, *candidates: datetime | None) -> datetime:
        return next((c for c in candidates if c is not None), self.now)

    # ------------------------------------------------------------ blobs

    def blob(self, key: ScopeKey, imp: ConsolidatedImport) -> None:
        self.blobs[key.key] = imp

    def consolidated2(self) -> None:
        newest_first = sorted(
            self.docs.consolidated2, key=lambda d: self.when(d.last_consolidated_at), reverse=True
        )
        for doc in newest_first:
            scope, _agent, user, _session = doc.key_fields()
            if scope == "session":
                self.drop(V2_CONSOLIDATED, doc, SESSION_SCOPE)
                continue
            key = self.key(V2_CONSOLIDATED, doc, scope, user)
            if key is None:
                continue
            if not doc.consolidated_content.strip():
                self.drop(V2_CONSOLIDATED, doc, EMPTY, user)
            elif key.key in self.blobs:
                self.drop(V2_CONSOLIDATED, doc, "older blob for the same scope", user)
            else:
                self.blob(
                    key,
                    ConsolidatedImport(
                        scope_key=key,
                        content=doc.consolidated_content.strip(),
                        version=IMPORTED_BLOB_VERSION,
                        word_limit=self.cfg.word_limit(scope),
                        updated_at=self.when(doc.last_consolidated_at, doc.created_at),
                        sources=(ref(V2_CONSOLIDATED, doc.id),),
                    ),
                )

    def key(self, collection: str, doc: EdenDoc, scope: str, user: str | None) -> ScopeKey | None:
        if scope == "agent":
            return ScopeKey.agent(self.agent)
        if user is None:
            self.drop(collection, doc, USER_SCOPE_NO_USER)
            return None
        if not is_id(user):
            self.drop(collection, doc, BAD_ID, detail=f"user_id {user!r}")
            return None
        return ScopeKey.user(self.agent, user)

    def user_blobs(self) -> None:
        for doc in self.docs.users:
            key = self.key(V1_USERS, doc, "user", doc.user_id)
            if key is None:
                continue
            if key.key in self.blobs:
                self.drop(V1_USERS, doc, SUPERSEDED, doc.user_id)
            elif not (doc.content or "").strip():
                self.drop(V1_USERS, doc, EMPTY, doc.user_id)
            else:
                self.blob(
                    key,
                    ConsolidatedImport(
                        scope_key=key,
                        content=(doc.content or "").strip(),
                        version=IMPORTED_BLOB_VERSION,
                        word_limit=self.cfg.word_limit_user,
                        updated_at=self.when(doc.last_updated_at, doc.created_at),
                        sources=(ref(V1_USERS, doc.id),),
                    ),
                )

    def agent_shards(self) -> None:
        key = ScopeKey.agent(self.agent)
        merged: list[AgentMemoryDoc] = []
        for shard in sorted(self.docs.shards, key=lambda s: (s.shard_name or "", s.id)):
            if not shard.is_active:
                self.drop(V1_AGENTS, shard, INACTIVE_SHARD)
            elif key.key in self.blobs:
                self.drop(V1_AGENTS, shard, SUPERSEDED)
            elif not (shard.content or "").strip():
                self.drop(V1_AGENTS, shard, EMPTY)
            else:
                merged.append(shard)
        if not merged:
            return
        parts = tuple(
            BlobPart(title=s.shard_name or "", content=(s.content or "").strip()) for s in merged
        )
        text, cut = concatenate(parts, self.cfg.word_limit_agent)
        self.blob(
            key,
            ConsolidatedImport(
                scope_key=key,
                content=text,
                version=IMPORTED_BLOB_VERSION,
                word_limit=self.cfg.word_limit_agent,
                updated_at=max(self.when(s.last_updated_at, s.created_at) for s in merged),
                parts=parts,
                words_cut=cut,
                sources=tuple(ref(V1_AGENTS, s.id) for s in merged),
            ),
        )

    # ------------------------------------------------------------ reflections and facts

    def reflection(
        self,
        collection: str,
        doc: EdenDoc,
        key: ScopeKey,
        content: str,
        *,
        pending: bool,
        formed_at: datetime,
        session: str | None,
    ) -> None:
        absorbed = not pending and key.key in self.blobs
        source = ref(collection, doc.id)
        self.reflections.append(
            ReflectionImport(
                reflection_id=source.derived_id("r"),
                scope_key=key,
                content=content,
                formed_at=formed_at,
                source_session_id=session if is_id(session) else None,
                absorbed_into_version=IMPORTED_BLOB_VERSION if absorbed else None,
                source=source,
            )
        )

    def reflections2(self) -> None:
        pending = {i for d in self.docs.consolidated2 for i in d.unabsorbed_ids}
        for doc in self.docs.reflections2:
            scopes = doc.scope if isinstance(doc.scope, list) else [doc.scope]
            scope = "user" if "user" in scopes else "agent" if "agent" in scopes else "session"
            if scope == "session":
                self.drop(V2_REFLECTIONS, doc, SESSION_SCOPE, doc.user_id)
                continue
            key = self.key(V2_REFLECTIONS, doc, scope, doc.user_id)
            if key is None:
                continue
            if not doc.content.strip():
                self.drop(V2_REFLECTIONS, doc, EMPTY, doc.user_id)
                continue
            self.reflection(
                V2_REFLECTIONS,
                doc,
                key,
                doc.content.strip(),
                pending=not doc.absorbed or doc.id in pending,
                formed_at=self.when(doc.formed_at, doc.created_at),
                session=doc.source_session_id or doc.session_id,
            )

    def fact2(self, doc: Memory2FactDoc) -> None:
        scopes = doc.scope if isinstance(doc.scope, list) else [doc.scope]
        # A fact drafted as both user and agent stays with the user: narrower visibility.
        scope = "user" if "user" in scopes and doc.user_id else "agent"
        if "user" in scopes and not doc.user_id and "agent" not in scopes:
            self.drop(V2_FACTS, doc, USER_SCOPE_NO_USER)
            return
        user = doc.user_id if scope == "user" else None
        if user is not None and not is_id(user):
            self.drop(V2_FACTS, doc, BAD_ID, detail=f"user_id {user!r}")
            return
        if not doc.content.strip():
            self.drop(V2_FACTS, doc, EMPTY, user)
            return
        formed = self.when(doc.formed_at, doc.created_at)
        history = tuple(
            FactRevision(
                version=i + 1,
                content=h.content,
                changed_at=self.when(h.updated_at, formed),
                reason=h.reason,
            )
            for i, h in enumerate(doc.update_history)
        )
        session = doc.source_session_id or doc.session_id
        source = ref(V2_FACTS, doc.id)
        self.facts.append(
            FactImport(
                fact_id=source.derived_id("f"),
                agent_id=self.agent,
                user_id=user,
                scope="user" if user else "agent",
                content=doc.content.strip(),
                formed_at=formed,
                updated_at=self.when(doc.updated_at, formed),
                version=max(doc.version, len(history) + 1),
                previous_content=doc.previous_content,
                history=history,
                access_count=doc.access_count,
                last_accessed_at=doc.last_accessed_at,
                source_session_id=session if is_id(session) else None,
                embedding=doc.embedding,
                embedding_model=(doc.embedding_model or EDEN_EMBEDDING_MODEL)
                if doc.embedding
                else None,
                source=source,
            )
        )

    def pending_users(self) -> dict[str, list[str]]:
        """Session memory id → every user whose blob lists it as pending: a group directive is
        listed by each of its users, and keeping one of them would make it that user's memory."""
        pending: dict[str, list[str]] = {}
        for u in self.docs.users:
            for i in u.unabsorbed_memory_ids:
                pending.setdefault(i, []).append(u.user_id)
        return pending

    def session_memories(self) -> None:
        user_pending = self.pending_users()
        shard_pending = {i for s in self.docs.shards for i in s.unabsorbed_memory_ids}
        for doc in sorted(self.docs.sessions, key=lambda d: d.id):
            shard = self.shards.get(doc.shard_id or "")
            kind = doc.memory_type.lower()
            formed = self.when(doc.created_at)
            if kind == "episode":
                self.drop(V1_SESSIONS, doc, EPISODE)
            elif not doc.content.strip():
                self.drop(V1_SESSIONS, doc, EMPTY)
            elif kind in ("fact", "suggestion") and shard is not None and not shard.is_active:
                self.drop(V1_SESSIONS, doc, INACTIVE_SHARD)
            elif kind == "directive":
                # Its users: those whose blob lists it pending and those it names. A directive
                # of a group stays one when some of its users' consolidations absorbed it.
                users = [*user_pending.get(doc.id, ()), *doc.related_users]
                if len(set(users)) != 1:
                    self.drop(V1_SESSIONS, doc, NO_USER if not users else f"directive {GROUP}")
                    continue
                key = self.key(V1_SESSIONS, doc, "user", users[0])
                if key is not None:
                    self.reflection(
                        V1_SESSIONS,
                        doc,
                        key,
                        doc.content.strip(),
                        pending=doc.id in user_pending,
                        formed_at=formed,
                        session=doc.source_session_id,
                    )
            elif kind == "suggestion":
                self.reflection(
                    V1_SESSIONS,
                    doc,
                    ScopeKey.agent(self.agent),
                    doc.content.strip(),
                    pending=doc.id in shard_pending,
                    formed_at=formed,
                    session=doc.source_session_id,
                )
            elif kind == "fact":
                source = ref(V1_SESSIONS, doc.id)
                session = doc.source_session_id
                self.facts.append(
                    FactImport(
                        fact_id=source.derived_id("f"),
                        agent_id=self.agent,
                        scope="agent",
                        content=doc.content.strip(),
                        formed_at=formed,
                        updated_at=formed,
                        source_session_id=session if is_id(session) else None,
                        source=source,
                    )
                )
            else:
                self.drop(V1_SESSIONS, doc, UNKNOWN_TYPE, detail=doc.memory_type)

    def run(self) -> ImportBatch:
        if not is_id(self.agent):
            d = self.docs
            count = len(d.sessions) + len(d.users) + len(d.shards) + len(d.facts2)
            count += len(d.reflections2) + len(d.consolidated2)
            everything = SourceRef(system="eden", collection="*", source_id=self.agent)
            detail = f"agent_id {self.agent!r}: all {count} documents"
            return ImportBatch(dropped=(Dropped(source=everything, reason=BAD_ID, detail=detail),))
        self.consolidated2()
        self.user_blobs()
        self.agent_shards()
        for doc in sorted(self.docs.facts2, key=lambda d: d.id):
            self.fact2(doc)
        self.reflections2()
        self.session_memories()
        facts, duplicates = dedup_facts(self.facts)  # memory2 first: it wins
        reflections, same = dedup_reflections(self.reflections)
        invalid = [
            Dropped(source=ref(c, i), agent_id=self.agent, reason="unreadable document", detail=e)
            for c, i, e in self.docs.invalid
        ]
        return ImportBatch(
            agents=(AgentImport(agent_id=self.agent),),
            facts=tuple(facts),
            reflections=tuple(reflections),
            consolidated=tuple(self.blobs.values()),
            dropped=tuple(self.dropped + duplicates + same + invalid),
        )


def map_agent(docs: EdenAgentDocs, cfg: ReflectionSettings, *, now: datetime) -> ImportBatch:
    """One agent's Eden documents → import records and drops. Pure; ``now`` dates undated records."""
    try:
        return _Mapper(docs, cfg, now).run()
    except ValidationError as e:  # a record the mapping built is invalid: report, never half-import
        raise ValueError(f"agent {docs.agent_id}: cannot map its documents: {e}") from e
