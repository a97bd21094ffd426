"""The reads the planners' snapshots are assembled from (memory.store.snapshots), once for both
SQL backends, inside the caller's transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory.api_keys import ApiKey
from memory.degraded import DegradedWindow
from memory.formation_commit import FormationCommitResult
from memory.models import AgentConfig, Fact, Reflection, SessionAgentState, StoredMessage
from memory.store.base_manage import ReembedTarget
from memory.store.snapshots import SnapshotReads
from memory.store.snapshots_erased import Head
from memory.store.sql.lifecycle_reads import SqlLifecycleReads
from memory.store.sql.sessions import STATE_SQL

# A fact is pending re-embedding (base_manage.ReembedTarget) when it has no side vector of the
# embedder for its current content hash and its vector is not already the embedder's.
PENDING_REEMBED = """
FROM facts AS f LEFT JOIN fact_reembed AS r
    ON r.fact_id = f.fact_id AND r.model = %(tag)s AND r.hash = f.hash
WHERE r.fact_id IS NULL AND f.embedding_model != %(kept)s
"""


def pending_params(target: ReembedTarget) -> dict[str, object]:
    return {"tag": target.tag, "kept": target.kept_model}


class SqlReads(SqlLifecycleReads, SnapshotReads):
    """The snapshot reads of one transaction (the lifecycle ones are SqlLifecycleReads')."""

    async def state(self, session_id: str, agent_id: str) -> SessionAgentState | None:
        sql = STATE_SQL + " WHERE sa.session_id = %s AND sa.agent_id = %s"
        row = await self.db.fetch_one(sql, (session_id, agent_id))
        return None if row is None else self.db.state(row)

    async def agents(self, agent_ids: Sequence[str] | None) -> list[AgentConfig]:
        rows = await self.db.fetch_in_or_all("SELECT config FROM agents WHERE agent_id", agent_ids)
        return [self.db.model(AgentConfig, row["config"]) for row in rows]

    async def facts_by_id(self, fact_ids: Sequence[str]) -> list[Fact]:
        # In no order: the callers look them up by id.
        sql = f"SELECT {self.db.fact_select} FROM facts AS f WHERE f.fact_id"
        return [self.db.fact(row) for row in await self.db.fetch_in(sql, fact_ids)]

    async def facts_with_hashes(self, agent_id: str, hashes: Sequence[str]) -> list[Fact]:
        sql = f"SELECT {self.db.fact_select} FROM facts AS f WHERE f.agent_id = %s AND f.hash"
        return [self.db.fact(row) for row in await self.db.fetch_in(sql, hashes, agent_id)]

    async def embedding_meta(self) -> tuple[str, int] | None:
        rows = await self.db.fetch(
            "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dimension')"
        )
        meta = {row["key"]: row["value"] for row in rows}
        if len(meta) < 2:
            return None
        return str(meta["embedding_model"]), int(meta["embedding_dimension"])

    async def formation_done(self, formation_id: str) -> FormationCommitResult | None:
        sql = "SELECT result FROM formation_commits WHERE formation_id = %s"
        row = await self.db.fetch_one(sql, (formation_id,))
        return None if row is None else self.db.model(FormationCommitResult, row["result"])

    async def reflections(self, reflection_ids: Sequence[str]) -> list[Reflection]:
        rows = await self.db.fetch_in(
            "SELECT * FROM reflections WHERE reflection_id", reflection_ids
        )
        return [self.db.reflection(row) for row in rows]

    async def _buffered_counts(self, keys: Sequence[str]) -> dict[str, int]:
        rows = await self.db.fetch_in(
            "SELECT scope_key, count(*) AS n FROM reflections "
            "WHERE absorbed_into_version IS NULL AND scope_key",
            keys,
            then="GROUP BY scope_key",
        )
        return {row["scope_key"]: int(row["n"]) for row in rows}

    async def pending_after(
        self, session_id: str, seq: int, *, withheld: Sequence[tuple[str, int]] = ()
    ) -> tuple[int, float]:
        # coalesce: a message without a user id is withheld under "" (rules.withheld.REPLIES),
        # and NOT (NULL = x) would be NULL, leaving it out of every count.
        unwithheld = " AND NOT (coalesce(user_id, '') = %s AND seq <= %s)" * len(withheld)
        row = await self.db.fetch_one(
            "SELECT count(*) AS n, coalesce(sum(weighted_tokens), 0.0) AS w FROM messages "
            "WHERE session_id = %s AND seq > %s" + unwithheld,
            (session_id, seq, *(v for pair in withheld for v in pair)),
        )
        assert row is not None
        return int(row["n"]), float(row["w"])

    async def participants(self, session_id: str, agent_id: str) -> frozenset[str]:
        sql = "SELECT user_id FROM session_agent_users WHERE session_id = %s AND agent_id = %s"
        return frozenset(await self.db.column(sql, session_id, agent_id))

    async def valid_since(
        self, agent_id: str, since: datetime, owners: Sequence[str]
    ) -> list[tuple[Fact, Sequence[float]]]:
        # Inserted or updated since (rules.recheck): one query per term, each on its index
        # (facts_inserted, facts_recent). One query ORing them lets SQLite's planner pick the
        # owner's whole range of facts_hash instead, scanned inside the write transaction.
        found: dict[str, tuple[Fact, Sequence[float]]] = {}
        for column in ("inserted_at", "updated_at"):
            rows = await self.db.fetch_in(
                f"SELECT {self.db.fact_select}, f.embedding FROM facts AS f WHERE f.agent_id = %s "
                f"AND f.invalidated_at IS NULL AND f.{column} >= %s AND COALESCE(f.user_id, '')",
                owners,
                agent_id,
                self.db.time(since),
            )
            for r in rows:
                fact = self.db.fact(r)
                found.setdefault(fact.fact_id, (fact, self.db.vector_of(r["embedding"]).tolist()))
        return list(found.values())

    async def deleted_by_hand_since(
        self, agent_id: str, since: datetime, owners: Sequence[str]
    ) -> list[Fact]:
        # Hand deletes only, on their partial index: not the facts formations replaced since.
        rows = await self.db.fetch_in(
            f"SELECT {self.db.fact_select} FROM facts AS f WHERE f.agent_id = %s "
            f"AND {self.db.hand_deleted} AND f.invalidated_at >= %s AND COALESCE(f.user_id, '')",
            owners,
            agent_id,
            self.db.time(since),
        )
        return [self.db.fact(r) for r in rows]

    async def reflection_texts(
        self, keys: Sequence[str], texts: Sequence[str]
    ) -> list[tuple[str, str, int | None]]:
        sql = (
            f"SELECT {self.db.content} AS content, absorbed_into_version FROM reflections "
            f"WHERE scope_key = %s AND {self.db.content}"
        )
        return [
            (key, r["content"], r["absorbed_into_version"])
            for key in keys
            for r in await self.db.fetch_in(sql, texts, key)
        ]

    async def session_head(self, session_id: str) -> Head | None:
        sql = "SELECT last_seq, last_message_at, has_guests FROM sessions WHERE session_id = %s"
        if (row := await self.db.fetch_one(sql, (session_id,))) is None:
            return None
        at = self.db.opt_time_of(row["last_message_at"])
        return Head(int(row["last_seq"]), at, bool(row["has_guests"]))

    async def stored_messages(
        self, session_id: str, message_ids: Sequence[str]
    ) -> list[StoredMessage]:
        sql = "SELECT * FROM messages WHERE session_id = %s AND message_id"
        return [self.db.message(r) for r in await self.db.fetch_in(sql, message_ids, session_id)]

    async def api_keys(self, key_ids: Sequence[str] | None) -> list[ApiKey]:
        rows = await self.db.fetch_in_or_all("SELECT record FROM api_keys WHERE key_id", key_ids)
        return [self.db.model(ApiKey, row["record"]) for row in rows]

    async def ended_unpurged(self, ended_before: datetime, limit: int) -> list[tuple[str, str]]:
        rows = await self.db.fetch(
            "SELECT session_id, agent_id FROM session_agents "
            "WHERE ended_at IS NOT NULL AND NOT purged AND ended_at < %s "
            "AND (last_message_at IS NULL OR last_message_at < %s) "
            "ORDER BY ended_at, session_id, agent_id LIMIT %s",
            (self.db.time(ended_before), self.db.time(ended_before), limit),
        )
        return [(str(row["session_id"]), str(row["agent_id"])) for row in rows]

    async def unreformed(self, session_id: str, agent_id: str) -> list[DegradedWindow]:
        sql = "SELECT * FROM degraded_windows WHERE session_id = %s AND agent_id = %s"
        rows = await self.db.fetch(f"{sql} AND reformed_at IS NULL", (session_id, agent_id))
        return [self.db.record(DegradedWindow, row) for row in rows]

    async def reembed_pending(self, target: ReembedTarget) -> tuple[int, int]:
        sql = f"SELECT count(*) AS n {PENDING_REEMBED}"
        left = await self.db.fetch_one(sql, pending_params(target))
        total = await self.db.fetch_one("SELECT count(*) AS n FROM facts")
        assert left is not None and total is not None
        return int(left["n"]), int(total["n"])
