"""commit_formation of the SQLite backend: the body of one BEGIN IMMEDIATE transaction.

Every check raises before COMMIT, and the caller rolls back on any exception, so a failed check
leaves nothing written (facts, reflections, cursor, counters, meta).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from memory.errors import (
    InvalidInputError,
    NotFoundError,
)
from memory.ids import content_hash
from memory.models import (
    Fact,
    FactAdd,
    FactInvalidate,
    FactRevision,
    FactUpdate,
    FormationCommit,
    FormationCommitResult,
    ScopeKey,
)
from memory.store.commit_rules import (
    check_current,
    check_cursor,
    check_embedding_meta,
    commit_dimension,
)
from memory.store.sqlite_codec import (
    FACT_COLUMNS,
    STATE_SQL,
    fact_from_row,
    history_to_json,
    state_from_row,
    to_blob,
    to_us,
)
from memory.store.sqlite_meta import (
    bump_version,
    bump_versions,
    read_embedding_meta,
    write_embedding_meta,
)
from memory.store.sqlite_schema import fact_counter_key

# The dedup key of a fact (the facts_hash index), for its four parameters.
SAME_FACT_KEY = "agent_id = ? AND coalesce(user_id, '') = ? AND scope = ? AND hash = ?"


def commit_formation_tx(conn: sqlite3.Connection, commit: FormationCommit) -> FormationCommitResult:
    done = conn.execute(
        "SELECT result FROM formation_commits WHERE formation_id = ?", (commit.formation_id,)
    ).fetchone()
    if done is not None:
        stored = FormationCommitResult.model_validate_json(done["result"])
        return stored.model_copy(update={"already_committed": True})

    row = conn.execute(
        STATE_SQL + " WHERE sa.session_id = ? AND sa.agent_id = ?",
        (commit.session_id, commit.agent_id),
    ).fetchone()
    check_cursor(None if row is None else state_from_row(row), commit)
    _check_embeddings(conn, commit)

    facts = _FactWriter(conn, commit)
    facts.apply()
    reflections_added, buffered_keys = _insert_reflections(conn, commit)
    bump_versions(conn, facts.touched | buffered_keys)

    conn.execute(
        """
        UPDATE session_agents SET
            cursor_seq = :cursor,
            formations = formations + 1,
            pending_messages = (SELECT count(*) FROM messages
                                WHERE session_id = :session AND seq > :cursor),
            pending_weighted_tokens = (SELECT coalesce(sum(weighted_tokens), 0.0) FROM messages
                                       WHERE session_id = :session AND seq > :cursor)
        WHERE session_id = :session AND agent_id = :agent
        """,
        {"cursor": commit.new_cursor, "session": commit.session_id, "agent": commit.agent_id},
    )
    buffered = {
        key: int(
            conn.execute(
                "SELECT count(*) FROM reflections "
                "WHERE scope_key = ? AND absorbed_into_version IS NULL",
                (key,),
            ).fetchone()[0]
        )
        for key in sorted(buffered_keys)
    }
    after = conn.execute(
        STATE_SQL + " WHERE sa.session_id = ? AND sa.agent_id = ?",
        (commit.session_id, commit.agent_id),
    ).fetchone()
    outcome = FormationCommitResult(
        formation_id=commit.formation_id,
        facts_added=facts.counts["added"],
        facts_updated=facts.counts["updated"],
        facts_invalidated=facts.counts["invalidated"],
        facts_duplicate=facts.counts["duplicate"],
        reflections_added=reflections_added,
        buffered=buffered,
        state=state_from_row(after),
    )
    conn.execute(
        "INSERT INTO formation_commits (formation_id, committed_at, result) VALUES (?, ?, ?)",
        (commit.formation_id, to_us(commit.committed_at), outcome.model_dump_json()),
    )
    return outcome


def _check_embeddings(conn: sqlite3.Connection, commit: FormationCommit) -> None:
    """All vectors of the commit share the stored model and dimension (the first sets them)."""
    dimension = commit_dimension(commit)
    if dimension is None:
        return
    meta = read_embedding_meta(conn)
    if meta is None:
        write_embedding_meta(conn, commit.embedding_model, dimension)
    else:
        check_embedding_meta(commit, dimension, meta)


def fact_scope_key(agent_id: str, scope: str, user_id: str | None) -> str:
    """The scope key whose version a write to this fact bumps (context caches watch it)."""
    if scope == "user":
        return ScopeKey(scope="user", agent_id=agent_id, user_id=user_id).key
    return ScopeKey(scope="agent", agent_id=agent_id).key


def rewrite_fact(
    conn: sqlite3.Connection,
    fact: Fact,
    *,
    content: str,
    hash_: str,
    embedding: bytes,
    embedding_model: str,
    at: datetime,
    reason: str,
    change_seq: int,
) -> None:
    """A new version of the fact with this content, valid, its old content kept in history."""
    revision = FactRevision(
        version=fact.version, content=fact.content, changed_at=at, reason=reason
    )
    conn.execute(
        """
        UPDATE facts SET content = ?, hash = ?, embedding = ?, embedding_model = ?,
            updated_at = ?, version = version + 1, previous_content = ?, history = ?,
            invalidated_at = NULL, invalidated_by = NULL, change_seq = ?
        WHERE fact_id = ?
        """,
        (
            content, hash_, embedding, embedding_model, to_us(at), fact.content,
            history_to_json((*fact.history, revision)), change_seq, fact.fact_id,
        ),
    )  # fmt: skip


class _FactWriter:
    """Applies the fact ops: adds and updates in order, then invalidations, whose replacement
    (an add of this commit) may have resolved to an existing fact (duplicate or revived)."""

    def __init__(self, conn: sqlite3.Connection, commit: FormationCommit) -> None:
        self.conn = conn
        self.commit = commit
        self.at = to_us(commit.committed_at)
        self.change_seq = 0
        self.resolved: dict[str, str] = {}  # FactAdd.fact_id -> the fact that holds its content
        self.counts = {"added": 0, "updated": 0, "invalidated": 0, "duplicate": 0}
        self.touched: set[str] = set()

    def apply(self) -> None:
        ops = self.commit.fact_ops
        if ops:
            self.change_seq = bump_version(self.conn, fact_counter_key(self.commit.agent_id))
        for op in ops:
            if isinstance(op, FactAdd):
                self._add(op)
            elif isinstance(op, FactUpdate):
                self._update(op)
        for op in ops:
            if isinstance(op, FactInvalidate):
                self._invalidate(op)

    def _current(self, fact_id: str, expected_version: int) -> Fact:
        row = self.conn.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE fact_id = ?", (fact_id,)
        ).fetchone()
        if row is None or row["agent_id"] != self.commit.agent_id:
            raise NotFoundError(f"no fact {fact_id} of agent {self.commit.agent_id}")
        fact = fact_from_row(row)
        check_current(
            fact_id,
            version=fact.version,
            invalidated=fact.invalidated_at is not None,
            expected_version=expected_version,
        )
        return fact

    def _find(self, scope: str, user_id: str | None, hash_: str, *, valid: bool) -> Fact | None:
        validity = "IS NULL" if valid else "IS NOT NULL"
        row = self.conn.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE {SAME_FACT_KEY} AND invalidated_at {validity} "
            "ORDER BY invalidated_at DESC LIMIT 1",
            (self.commit.agent_id, user_id or "", scope, hash_),
        ).fetchone()
        return None if row is None else fact_from_row(row)

    def _rewrite(
        self, fact: Fact, content: str, embedding: list[float], reason: str, hash_: str
    ) -> None:
        rewrite_fact(
            self.conn, fact, content=content, hash_=hash_, embedding=to_blob(embedding),
            embedding_model=self.commit.embedding_model, at=self.commit.committed_at,
            reason=reason, change_seq=self.change_seq,
        )  # fmt: skip
        self.touched.add(fact_scope_key(fact.agent_id, fact.scope, fact.user_id))

    def _add(self, op: FactAdd) -> None:
        if (op.scope == "user") != (op.user_id is not None):
            raise InvalidInputError(f"fact {op.fact_id}: user scope needs a user_id, agent none")
        hash_ = content_hash(op.content)
        duplicate = self._find(op.scope, op.user_id, hash_, valid=True)
        if duplicate is not None:
            self.resolved[op.fact_id] = duplicate.fact_id
            self.counts["duplicate"] += 1
            return
        invalidated = self._find(op.scope, op.user_id, hash_, valid=False)
        if invalidated is not None:
            self._rewrite(invalidated, op.content, op.embedding, "revived", hash_)
            self.resolved[op.fact_id] = invalidated.fact_id
            self.counts["added"] += 1
            return
        try:
            self.conn.execute(
                """
                INSERT INTO facts (fact_id, agent_id, user_id, scope, content, hash, embedding,
                    embedding_model, source_session_id, formed_at, updated_at, change_seq)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                (
                    op.fact_id, self.commit.agent_id, op.user_id, op.scope, op.content, hash_,
                    to_blob(op.embedding), self.commit.embedding_model, self.commit.session_id,
                    self.at, self.at, self.change_seq,
                ),
            )  # fmt: skip
        except sqlite3.IntegrityError as exc:
            raise InvalidInputError(f"fact id {op.fact_id} is already used") from exc
        self.resolved[op.fact_id] = op.fact_id
        self.counts["added"] += 1
        self.touched.add(fact_scope_key(self.commit.agent_id, op.scope, op.user_id))

    def _update(self, op: FactUpdate) -> None:
        fact = self._current(op.fact_id, op.expected_version)
        hash_ = content_hash(op.content)
        duplicate = None
        if hash_ != fact.hash:
            duplicate = self._find(fact.scope, fact.user_id, hash_, valid=True)
        if duplicate is None:
            self._rewrite(fact, op.content, op.embedding, op.reason, hash_)
            self.counts["updated"] += 1
            return
        # The new content is another valid fact's: the two are one fact now; keep that one.
        self._mark_invalid(fact, duplicate.fact_id)
        self.counts["duplicate"] += 1

    def _invalidate(self, op: FactInvalidate) -> None:
        fact = self._current(op.fact_id, op.expected_version)
        replacement = self.resolved.get(op.replaced_by)
        if replacement is None:
            raise InvalidInputError(f"{op.replaced_by} is not a fact added by this commit")
        if replacement == fact.fact_id:
            # The replacement turned out to be this very fact (same content): nothing to replace.
            return
        self._mark_invalid(fact, replacement)
        self.counts["invalidated"] += 1

    def _mark_invalid(self, fact: Fact, replaced_by: str) -> None:
        self.conn.execute(
            "UPDATE facts SET invalidated_at = ?, invalidated_by = ?, change_seq = ? "
            "WHERE fact_id = ?",
            (self.at, replaced_by, self.change_seq, fact.fact_id),
        )
        self.touched.add(fact_scope_key(fact.agent_id, fact.scope, fact.user_id))


def _insert_reflections(conn: sqlite3.Connection, commit: FormationCommit) -> tuple[int, set[str]]:
    """Insert by id, existing ids left alone; returns (inserted, scope keys of the reflections)."""
    added = 0
    keys: set[str] = set()
    for reflection in commit.reflections:
        key = reflection.scope_key
        if key.agent_id != commit.agent_id:
            raise InvalidInputError(f"reflection {reflection.reflection_id} of another agent")
        cursor = conn.execute(
            """
            INSERT INTO reflections (reflection_id, scope_key, scope, agent_id, user_id,
                session_id, content, source_session_id, formed_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (reflection_id) DO NOTHING
            """,
            (
                reflection.reflection_id, key.key, key.scope, key.agent_id, key.user_id,
                key.session_id, reflection.content, reflection.source_session_id,
                to_us(reflection.formed_at),
            ),
        )  # fmt: skip
        added += cursor.rowcount
        keys.add(key.key)
    return added, keys
