"""The reads the planners' snapshots are assembled from (memory.store.snapshots), inside the
caller's transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory.api_keys import ApiKey
from memory.models import Fact, FormationCommitResult, Reflection, SessionAgentState
from memory.store.postgres.codec import (
    FACT_SELECT,
    STATE_SQL,
    fact_from_row,
    reflection_from_row,
    state_from_row,
    vector_list,
)
from memory.store.postgres.lifecycle_reads import buffered_counts, read_epochs
from memory.store.postgres.pool import Conn, embedding_meta, fetch, fetch_one
from memory.store.postgres.reembed import count_pending_reembeds
from memory.store.rules.recheck import reflection_text_key
from memory.store.snapshots import SnapshotReads


async def read_state(conn: Conn, session_id: str, agent_id: str) -> SessionAgentState | None:
    row = await fetch_one(
        conn, STATE_SQL + " WHERE sa.session_id = %s AND sa.agent_id = %s", (session_id, agent_id)
    )
    return None if row is None else state_from_row(row)


async def facts_by_id(conn: Conn, ids: Sequence[str]) -> list[Fact]:
    """The facts that exist among ``ids``, in the order asked."""
    rows = await fetch(
        conn, f"SELECT {FACT_SELECT} FROM facts AS f WHERE f.fact_id = ANY(%s)", (list(ids),)
    )
    found = {fact.fact_id: fact for fact in map(fact_from_row, rows)}
    return [found[fid] for fid in ids if fid in found]


async def reflection(conn: Conn, reflection_id: str) -> Reflection | None:
    row = await fetch_one(
        conn, "SELECT * FROM reflections WHERE reflection_id = %s", (reflection_id,)
    )
    return None if row is None else reflection_from_row(row)


async def api_key(conn: Conn, key_id: str) -> ApiKey | None:
    row = await fetch_one(conn, "SELECT record FROM api_keys WHERE key_id = %s", (key_id,))
    return None if row is None else ApiKey.model_validate(row["record"])


class PostgresReads(SnapshotReads):
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def _column(self, sql: str, *params: object) -> frozenset[str]:
        """The first column of a query's rows, as strings."""
        return frozenset(str(next(iter(r.values()))) for r in await fetch(self.conn, sql, params))

    async def state(self, session_id: str, agent_id: str) -> SessionAgentState | None:
        return await read_state(self.conn, session_id, agent_id)

    async def facts_by_id(self, fact_ids: Sequence[str]) -> list[Fact]:
        return await facts_by_id(self.conn, fact_ids)

    async def facts_with_hashes(self, agent_id: str, hashes: Sequence[str]) -> list[Fact]:
        rows = await fetch(
            self.conn,
            f"SELECT {FACT_SELECT} FROM facts AS f WHERE f.agent_id = %s AND f.hash = ANY(%s)",
            (agent_id, list(hashes)),
        )
        return [fact_from_row(row) for row in rows]

    async def embedding_meta(self) -> tuple[str, int] | None:
        return await embedding_meta(self.conn)

    async def formation_done(self, formation_id: str) -> FormationCommitResult | None:
        sql = "SELECT result FROM formation_commits WHERE formation_id = %s"
        row = await fetch_one(self.conn, sql, (formation_id,))
        return None if row is None else FormationCommitResult.model_validate(row["result"])

    async def existing_reflections(self, reflection_ids: Sequence[str]) -> frozenset[str]:
        sql = "SELECT reflection_id FROM reflections WHERE reflection_id = ANY(%s)"
        return await self._column(sql, list(reflection_ids))

    async def buffered_counts(self, keys: Sequence[str]) -> dict[str, int]:
        return await buffered_counts(self.conn, keys)

    async def pending_after(
        self, session_id: str, seq: int, *, except_user: str | None = None
    ) -> tuple[int, float]:
        row = await fetch_one(
            self.conn,
            "SELECT count(*) AS n, coalesce(sum(weighted_tokens), 0.0) AS w FROM messages "
            "WHERE session_id = %s AND seq > %s "
            "AND (%s::text IS NULL OR user_id IS DISTINCT FROM %s)",
            (session_id, seq, except_user, except_user),
        )
        assert row is not None
        return int(row["n"]), float(row["w"])

    async def participants(self, session_id: str, agent_id: str) -> frozenset[str]:
        sql = "SELECT user_id FROM session_agent_users WHERE session_id = %s AND agent_id = %s"
        return await self._column(sql, session_id, agent_id)

    async def epochs(self, agent_id: str, user_ids: Sequence[str]) -> dict[str, int]:
        return await read_epochs(self.conn, agent_id, user_ids)

    async def valid_since(
        self, agent_id: str, since: datetime
    ) -> list[tuple[Fact, Sequence[float]]]:
        rows = await fetch(
            self.conn,
            f"SELECT {FACT_SELECT}, f.embedding FROM facts AS f WHERE f.agent_id = %s "
            "AND f.invalidated_at IS NULL AND f.updated_at >= %s",
            (agent_id, since),
        )
        return [(fact_from_row(row), vector_list(row["embedding"])) for row in rows]

    async def reflection_texts(
        self, keys: Sequence[str], texts: Sequence[str]
    ) -> frozenset[tuple[str, str]]:
        rows = await fetch(
            self.conn,
            "SELECT scope_key, body->>'content' AS content FROM reflections "
            "WHERE scope_key = ANY(%s) AND body->>'content' = ANY(%s)",
            (list(keys), list(texts)),
        )
        return frozenset(reflection_text_key(row["scope_key"], row["content"]) for row in rows)

    async def session_head(self, session_id: str) -> tuple[int, datetime | None] | None:
        sql = "SELECT last_seq, last_message_at FROM sessions WHERE session_id = %s"
        row = await fetch_one(self.conn, sql, (session_id,))
        return None if row is None else (int(row["last_seq"]), row["last_message_at"])

    async def stored_message_ids(
        self, session_id: str, message_ids: Sequence[str]
    ) -> frozenset[str]:
        sql = "SELECT message_id FROM messages WHERE session_id = %s AND message_id = ANY(%s)"
        return await self._column(sql, session_id, list(message_ids))

    async def reflection(self, reflection_id: str) -> Reflection | None:
        return await reflection(self.conn, reflection_id)

    async def blob_version(self, key: str) -> int:
        sql = "SELECT version FROM consolidated WHERE scope_key = %s"
        row = await fetch_one(self.conn, sql, (key,))
        return 0 if row is None else int(row["version"])

    async def buffered_among(self, key: str, reflection_ids: Sequence[str]) -> int:
        sql = (
            "SELECT reflection_id FROM reflections WHERE scope_key = %s "
            "AND absorbed_into_version IS NULL AND reflection_id = ANY(%s)"
        )
        return len(await self._column(sql, key, list(reflection_ids)))

    async def api_key(self, key_id: str) -> ApiKey | None:
        return await api_key(self.conn, key_id)

    async def reembed_pending(self, model: str) -> tuple[int, int]:
        return await count_pending_reembeds(self.conn, model)

    # ------------------------------------------------------------ the lifecycle snapshots' own

    async def stored_epoch(self, agent_key: str, user_id: str) -> int:
        sql = "SELECT epoch FROM erasures WHERE agent_key = %s AND user_id = %s"
        row = await fetch_one(self.conn, sql, (agent_key, user_id))
        return 0 if row is None else int(row["epoch"])

    async def existing_agents(self, agent_ids: Sequence[str]) -> frozenset[str]:
        sql = "SELECT agent_id FROM agents WHERE agent_id = ANY(%s)"
        return await self._column(sql, list(agent_ids))

    async def existing_facts(self, fact_ids: Sequence[str]) -> frozenset[str]:
        return await self._column(
            "SELECT fact_id FROM facts WHERE fact_id = ANY(%s)", list(fact_ids)
        )

    async def valid_fact_keys(self, agent_id: str, hash_: str) -> set[tuple[str, str, str, str]]:
        rows = await fetch(
            self.conn,
            "SELECT agent_id, coalesce(user_id, '') AS u, scope, hash FROM facts "
            "WHERE agent_id = %s AND hash = %s AND invalidated_at IS NULL",
            (agent_id, hash_),
        )
        return {(r["agent_id"], r["u"], r["scope"], r["hash"]) for r in rows}

    async def blobs(self, keys: Sequence[str]) -> dict[str, tuple[str, int]]:
        rows = await fetch(
            self.conn,
            "SELECT scope_key, body->>'content' AS content, version FROM consolidated "
            "WHERE scope_key = ANY(%s)",
            (list(keys),),
        )
        return {r["scope_key"]: (str(r["content"]), int(r["version"])) for r in rows}

    async def session_users(self, session_id: str) -> tuple[str, ...]:
        sql = "SELECT user_id FROM session_users WHERE session_id = %s ORDER BY ord"
        return tuple(row["user_id"] for row in await fetch(self.conn, sql, (session_id,)))

    async def session_states(self, session_id: str) -> list[SessionAgentState]:
        sql = STATE_SQL + " WHERE sa.session_id = %s ORDER BY sa.ord"
        return [state_from_row(row) for row in await fetch(self.conn, sql, (session_id,))]

    async def message_seqs(self, session_id: str, message_ids: Sequence[str]) -> dict[str, int]:
        sql = "SELECT message_id, seq FROM messages WHERE session_id = %s AND message_id = ANY(%s)"
        rows = await fetch(self.conn, sql, (session_id, list(message_ids)))
        return {r["message_id"]: int(r["seq"]) for r in rows}

    async def taken_seqs(self, session_id: str, seqs: Sequence[int]) -> frozenset[int]:
        sql = "SELECT seq FROM messages WHERE session_id = %s AND seq = ANY(%s)"
        rows = await fetch(self.conn, sql, (session_id, list(seqs)))
        return frozenset(int(r["seq"]) for r in rows)

    async def user_session_ids(self, user_id: str, agent_id: str) -> list[str]:
        rows = await fetch(
            self.conn,
            "SELECT su.session_id FROM session_users AS su JOIN session_agents AS sa "
            "ON sa.session_id = su.session_id WHERE su.user_id = %s AND sa.agent_id = %s",
            (user_id, agent_id),
        )
        return [row["session_id"] for row in rows]

    async def message_counts(self, session_id: str, user_id: str) -> tuple[int, int]:
        row = await fetch_one(
            self.conn,
            "SELECT count(*) AS n, count(*) FILTER (WHERE user_id = %s) AS mine FROM messages "
            "WHERE session_id = %s",
            (user_id, session_id),
        )
        assert row is not None
        return int(row["n"]), int(row["mine"])

    async def user_facts(self, agent_id: str, user_id: str) -> list[Fact]:
        sql = f"SELECT {FACT_SELECT} FROM facts AS f WHERE f.agent_id = %s AND f.user_id = %s"
        return [fact_from_row(row) for row in await fetch(self.conn, sql, (agent_id, user_id))]

    async def reflection_count(self, key: str) -> int:
        sql = "SELECT count(*) AS n FROM reflections WHERE scope_key = %s"
        row = await fetch_one(self.conn, sql, (key,))
        return 0 if row is None else int(row["n"])

    async def has_blob(self, key: str) -> bool:
        sql = "SELECT 1 AS one FROM consolidated WHERE scope_key = %s"
        return await fetch_one(self.conn, sql, (key,)) is not None

    async def cached_text_hashes(self, text_hashes: Sequence[str]) -> frozenset[str]:
        sql = "SELECT DISTINCT text_hash FROM embedding_cache WHERE text_hash = ANY(%s)"
        return await self._column(sql, list(text_hashes))

    async def contents_elsewhere(
        self, agent_id: str, user_id: str, content_hashes: Sequence[str]
    ) -> list[str]:
        rows = await fetch(
            self.conn,
            "SELECT body->>'content' AS content FROM facts WHERE NOT (agent_id = %s AND "
            "coalesce(user_id, '') = %s) AND hash = ANY(%s)",
            (agent_id, user_id, list(content_hashes)),
        )
        return [row["content"] for row in rows]
