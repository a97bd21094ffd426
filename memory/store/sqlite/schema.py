"""DDL of the SQLite backend. Timestamps are integer microseconds since the Unix epoch (UTC), so
that they sort and compare exactly; vectors are float32 BLOBs; fact history is JSON."""

from __future__ import annotations

from memory.store.sql.sessions import GUESTS_BACKFILL_SQL, GUESTS_INDEX_SQL

SCHEMA_VERSION = 19
KANA_SCHEMA = 19  # the fold keeps kana voicing: the facts holding kana are folded anew

# SQLite's clock as a stored timestamp (integer microseconds since the epoch; 'now' has
# millisecond precision).
NOW_US = "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"

DDL = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS agents (
    agent_id TEXT PRIMARY KEY,
    config   TEXT NOT NULL                      -- AgentConfig as JSON
) WITHOUT ROWID;

-- Ending is per agent (session_agents); files of schema 1 keep unused ended_at/purged columns.
CREATE TABLE IF NOT EXISTS sessions (
    session_id      TEXT PRIMARY KEY,
    created_at      INTEGER NOT NULL,
    last_seq        INTEGER NOT NULL DEFAULT 0,
    last_message_at INTEGER,
    has_guests      INTEGER NOT NULL DEFAULT 0  -- 1: a guest spoke (SessionInfo.has_guests)
);

-- Rowid order = join order, which is the order SessionInfo lists users in.
CREATE TABLE IF NOT EXISTS session_users (
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    UNIQUE (session_id, user_id)
);

-- One row per agent of a session: membership, formation cursor and what is pending after it.
-- last_message_at is the session's, copied here so that the cold-sessions index can hold it.
CREATE TABLE IF NOT EXISTS session_agents (
    session_id              TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    agent_id                TEXT NOT NULL,
    cursor_seq              INTEGER NOT NULL DEFAULT 0,
    pending_messages        INTEGER NOT NULL DEFAULT 0,
    pending_weighted_tokens REAL NOT NULL DEFAULT 0,
    last_message_at         INTEGER,
    formations              INTEGER NOT NULL DEFAULT 0,
    ended_at                INTEGER,            -- when this agent ended the session
    purged                  INTEGER NOT NULL DEFAULT 0,  -- 1: its session memory was purged
    -- Schema 8: SessionAgentState.withheld as JSON [[user, seq], ...] (memory.store.rules.withheld)
    withheld                TEXT NOT NULL DEFAULT '[]',
    -- Schema 17: SessionAgentState.switch_marks as JSON [[seq, user, agent], ...]
    -- (memory/switch_marks.py)
    switch_marks            TEXT NOT NULL DEFAULT '[]',
    UNIQUE (session_id, agent_id)
);
-- purge_ended_sessions walks the ended, not yet purged (session, agent) rows oldest first.
CREATE INDEX IF NOT EXISTS session_agents_to_purge ON session_agents (ended_at, session_id, agent_id)
    WHERE ended_at IS NOT NULL AND NOT purged;

-- An agent's participants: the users who spoke in the session since it joined (rowid = order).
CREATE TABLE IF NOT EXISTS session_agent_users (
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    agent_id   TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    UNIQUE (session_id, agent_id, user_id)
);
-- list_cold_sessions is a range scan of this index. Partial: formed-up states (pending 0), which
-- are most of them over time, never cost the scan anything. The query repeats the WHERE term.
CREATE INDEX IF NOT EXISTS session_agents_cold
    ON session_agents (last_message_at, session_id, agent_id) WHERE pending_messages > 0;

CREATE TABLE IF NOT EXISTS messages (
    session_id      TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    message_id      TEXT NOT NULL,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    user_id         TEXT,
    name            TEXT,
    agent_id        TEXT,
    -- weight(role) * ceil(len / chars_per_token) with the settings of the recording call, so that
    -- pending counters can be recomputed after a cursor move without the settings.
    weighted_tokens REAL NOT NULL,
    -- Schema 9: the UTC offset created_at was sent with (StoredMessage.utc_offset_minutes);
    -- NULL for messages stored before: UTC.
    utc_offset_minutes INTEGER,
    UNIQUE (session_id, seq),
    UNIQUE (session_id, message_id)
);
-- Schema 5: forget_user and export find a user's sessions by the messages carrying the user's id,
-- whatever their role (participants are only those who spoke with role "user").
CREATE INDEX IF NOT EXISTS messages_user ON messages (user_id, session_id)
    WHERE user_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS facts (
    rowid             INTEGER PRIMARY KEY,      -- the FTS5 content rowid
    fact_id           TEXT NOT NULL UNIQUE,
    agent_id          TEXT NOT NULL,
    user_id           TEXT,
    scope             TEXT NOT NULL CHECK (scope IN ('user', 'agent')),
    content           TEXT NOT NULL,
    hash              TEXT NOT NULL,
    embedding         BLOB NOT NULL,            -- float32, embedding_dimension values
    embedding_model   TEXT NOT NULL,
    source_session_id TEXT,
    source_message_ids TEXT NOT NULL DEFAULT '[]',  -- JSON list of message ids (provenance)
    formation_id      TEXT,
    said_at           INTEGER,
    said_utc_offset_minutes INTEGER,         -- the speaker's clock of said_at (NULL: UTC)
    formed_at         INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    version           INTEGER NOT NULL DEFAULT 1,
    previous_content  TEXT,
    history           TEXT NOT NULL DEFAULT '[]',
    invalidated_at    INTEGER,
    invalidated_by    TEXT,
    access_count      INTEGER NOT NULL DEFAULT 0,
    last_accessed_at  INTEGER,
    -- Value of the agent's fact-change counter at this row's last write: the vector cache of
    -- another connection reads only the rows changed since it last looked.
    change_seq        INTEGER NOT NULL,
    -- Schema 11: what the text index holds of a content that is not ASCII (search_text_of);
    -- NULL: the content itself (FTS5 lowercases ASCII as the fold does).
    search_text       TEXT,
    inserted_at       INTEGER                   -- schema 13: see ADDED_COLUMNS
);
-- Exact duplicates: one valid fact per (agent, user, scope, normalised content). Invalidated facts
-- are outside the index so that an update may take over the content of an invalidated fact.
CREATE UNIQUE INDEX IF NOT EXISTS facts_hash
    ON facts (agent_id, coalesce(user_id, ''), scope, hash) WHERE invalidated_at IS NULL;
CREATE INDEX IF NOT EXISTS facts_invalid_hash
    ON facts (agent_id, coalesce(user_id, ''), scope, hash) WHERE invalidated_at IS NOT NULL;
-- A commit's snapshot: the agent's facts with the contents it writes, whatever their scope.
CREATE INDEX IF NOT EXISTS facts_agent_hash ON facts (agent_id, hash);
CREATE INDEX IF NOT EXISTS facts_changes ON facts (agent_id, change_seq);
CREATE INDEX IF NOT EXISTS facts_recent
    ON facts (agent_id, updated_at) WHERE invalidated_at IS NULL;
-- Schema 14: a commit's snapshot reads the agent's facts a person deleted (invalidated by no
-- fact) since its earliest add was said: rare rows, found without scanning the replaced ones.
CREATE INDEX IF NOT EXISTS facts_hand_deleted
    ON facts (agent_id, invalidated_at) WHERE invalidated_at IS NOT NULL AND invalidated_by IS NULL;

-- mnemos reembed: each fact's vector in the new model, until the switch swaps them in.
CREATE TABLE IF NOT EXISTS fact_reembed (
    fact_id    TEXT PRIMARY KEY,
    model      TEXT NOT NULL,
    hash       TEXT NOT NULL,     -- facts.hash of the content the vector was made from
    embedding  BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS reflections (
    reflection_id         TEXT PRIMARY KEY,
    scope_key             TEXT NOT NULL,        -- ScopeKey.key
    scope                 TEXT NOT NULL,
    agent_id              TEXT NOT NULL,
    user_id               TEXT,
    session_id            TEXT,                 -- set for session-scoped reflections only
    content               TEXT NOT NULL,
    source_session_id     TEXT NOT NULL,
    formed_at             INTEGER NOT NULL,
    absorbed_into_version INTEGER,
    source_message_ids    TEXT NOT NULL DEFAULT '[]',  -- JSON list of message ids (provenance)
    formation_id          TEXT,
    said_at               INTEGER                   -- schema 15: see ADDED_COLUMNS
);
CREATE INDEX IF NOT EXISTS reflections_buffer
    ON reflections (scope_key, formed_at) WHERE absorbed_into_version IS NULL;
CREATE INDEX IF NOT EXISTS reflections_session
    ON reflections (session_id) WHERE session_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS consolidated (
    scope_key  TEXT PRIMARY KEY,
    scope      TEXT NOT NULL,
    agent_id   TEXT NOT NULL,
    user_id    TEXT,
    session_id TEXT,
    content    TEXT NOT NULL,
    version    INTEGER NOT NULL,
    word_limit INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    edited_by  TEXT NOT NULL,
    said_from  INTEGER,                     -- schema 16: see ADDED_COLUMNS
    said_from_version INTEGER
);
CREATE INDEX IF NOT EXISTS consolidated_session
    ON consolidated (session_id) WHERE session_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS formation_commits (
    formation_id TEXT PRIMARY KEY,
    committed_at INTEGER NOT NULL,
    result       TEXT NOT NULL                  -- FormationCommitResult as JSON
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS embedding_cache (
    model     TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector    BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;

-- Change counters: ScopeKey.key rows for context caches, and 'facts:{agent_id}' rows that every
-- fact write bumps (the vector cache's freshness check).
CREATE TABLE IF NOT EXISTS scope_versions (
    key     TEXT PRIMARY KEY,
    version INTEGER NOT NULL
) WITHOUT ROWID;

-- mnemos serve: an agent's sessions (and through them its users) for the memory page.
CREATE INDEX IF NOT EXISTS session_agents_agent ON session_agents (agent_id);

-- mnemos serve: API keys, shared by every replica; never the secret, only its sha256.
CREATE TABLE IF NOT EXISTS api_keys (
    key_id     TEXT PRIMARY KEY,
    record     TEXT NOT NULL,                   -- ApiKey as JSON
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
"""


# Schema 1 → 2, before the DDL (whose indexes name the new columns): ending and participants move
# from the session to each of its agents. Each agent of an ended session ended it then.
MIGRATE_1_TO_2 = """
ALTER TABLE session_agents ADD COLUMN ended_at INTEGER;
ALTER TABLE session_agents ADD COLUMN purged INTEGER NOT NULL DEFAULT 0;
UPDATE session_agents SET
    ended_at = (SELECT s.ended_at FROM sessions AS s WHERE s.session_id = session_agents.session_id),
    purged = (SELECT s.purged FROM sessions AS s WHERE s.session_id = session_agents.session_id);
DROP INDEX IF EXISTS sessions_to_purge;
CREATE TABLE IF NOT EXISTS session_agent_users (
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    agent_id   TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    UNIQUE (session_id, agent_id, user_id)
);
INSERT OR IGNORE INTO session_agent_users (session_id, agent_id, user_id)
    SELECT sa.session_id, sa.agent_id, su.user_id
    FROM session_users AS su JOIN session_agents AS sa ON sa.session_id = su.session_id
    ORDER BY su.rowid, sa.rowid;
"""


# Columns added to tables of older files (the DDL creates them anew). Schema 2 → 3: provenance.
ADDED_COLUMNS = (
    ("facts", "source_message_ids", "TEXT NOT NULL DEFAULT '[]'"),
    ("facts", "formation_id", "TEXT"),
    ("facts", "said_at", "INTEGER"),
    ("reflections", "source_message_ids", "TEXT NOT NULL DEFAULT '[]'"),
    ("reflections", "formation_id", "TEXT"),
    # Schema 6 → 7: the guests of a session (memory.models.SessionInfo.has_guests).
    ("sessions", "has_guests", "INTEGER NOT NULL DEFAULT 0"),
    # Schema 7 → 8: what a forget kept for the other agents of a shared session, not this
    # agent's to form (memory.store.rules.withheld); older rows: nothing withheld.
    ("session_agents", "withheld", "TEXT NOT NULL DEFAULT '[]'"),
    # Schema 8 → 9: the speaker's UTC offset of each message; older rows NULL (read as UTC).
    ("messages", "utc_offset_minutes", "INTEGER"),
    # Schema 9 → 10: the UTC offset a fact was said in (Fact.said_utc_offset_minutes, memory.said);
    # older rows NULL (UTC). Its history keeps each revision's inside its said_at (JSON text).
    ("facts", "said_utc_offset_minutes", "INTEGER"),
    # Schema 10 → 11: the folded text the FTS5 index holds (FTS_DDL); filled by migrate_fts.
    ("facts", "search_text", "TEXT"),
    # Schema 12 → 13: when this store inserted the row, by its clock (rules.recheck: the
    # re-check of a commit reads the rows inserted since its candidates were read, whatever
    # their own updated_at says); older rows NULL.
    ("facts", "inserted_at", "INTEGER"),
    # Schema 14 → 15: when a reflection was said (Reflection.said_at: a consolidation merges its
    # batch in the order things were said); older rows NULL (read in the order formed).
    ("reflections", "said_at", "INTEGER"),
    # Schema 15 → 16: when the earliest reflection a blob absorbed was said
    # (ConsolidatedMemory.said_from); older rows NULL (not known: every reflection is news).
    ("consolidated", "said_from", "INTEGER"),
    # ...and the blob version it was written for (memory.store.records.blob_said_from).
    ("consolidated", "said_from_version", "INTEGER"),
    # Schema 16 → 17: the memory switches each session's messages were recorded under
    # (memory/switch_marks.py); older rows: none marked (formed under the switches then).
    ("session_agents", "switch_marks", "TEXT NOT NULL DEFAULT '[]'"),
)

# Schema 3 → 4, after ADDED_COLUMNS (its index names said_at, a column older files gain there):
# the context FIFO's order, recency as said (updated_at for facts without said_at; see
# MemoryStore.recent_facts). Queries name the same expression to use the index
# (memory.store.sql.facts.SAID_OR_UPDATED).
# Schema 7, at every setup (the column is ADDED_COLUMNS'): the guests' messages (index) and the
# sessions holding one not marked yet, marked (sql.sessions.GUESTS_BACKFILL_SQL: the previous
# version's writers, still running during an upgrade, record guests without marking).
# Schema 13 (inserted_at is ADDED_COLUMNS'): the re-check's read by insertion time (index), and
# the stamp of a row inserted without one (trigger): a process of the previous version, still
# writing during an upgrade, knows no inserted_at; this version's inserts stamp their own.
AFTER_ADDED_COLUMNS = f"""
CREATE INDEX IF NOT EXISTS facts_said
    ON facts (agent_id, coalesce(said_at, updated_at)) WHERE invalidated_at IS NULL;
{GUESTS_INDEX_SQL};
{GUESTS_BACKFILL_SQL};
CREATE INDEX IF NOT EXISTS facts_inserted
    ON facts (agent_id, inserted_at) WHERE invalidated_at IS NULL;
CREATE TRIGGER IF NOT EXISTS facts_inserted_at AFTER INSERT ON facts
    WHEN new.inserted_at IS NULL BEGIN
    UPDATE facts SET inserted_at = {NOW_US} WHERE rowid = new.rowid;
END;
"""


def needs_migration(columns: set[str]) -> bool:
    """An existing session_agents table (its column names) of schema 1."""
    return bool(columns) and "ended_at" not in columns


def fact_counter_key(agent_id: str) -> str:
    """The scope_versions row bumped by every write to the agent's facts."""
    return f"facts:{agent_id}"


def facts_purge_key(agent_id: str) -> str:
    """Bumped by every hard delete of the agent's facts (forget_user): vector caches reload the
    agent whole, since a deleted row leaves no change for them to read."""
    return f"facts_purged:{agent_id}"


ERASURES_DDL = """
-- One row per (agent or '*', user) ever forgotten: the epoch formations check at commit, and
-- what was deleted (counts only, no content).
CREATE TABLE IF NOT EXISTS erasures (
    agent_key    TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    epoch        INTEGER NOT NULL,
    forgotten_at INTEGER NOT NULL,
    counts       TEXT NOT NULL,
    PRIMARY KEY (agent_key, user_id)
) WITHOUT ROWID;
"""


# Schema 5 → 6: the lasting record of degraded windows (memory/degraded.py; a run's memo keeps
# its newest only, until the namespace's retention deletes the run). Created by every setup:
# older files gain it. Few rows (degrading is the exception): listed newest first by the index.
DEGRADED_DDL = """
CREATE TABLE IF NOT EXISTS degraded_windows (
    session_id   TEXT NOT NULL,
    agent_id     TEXT NOT NULL,
    after_seq    INTEGER NOT NULL,
    upto_seq     INTEGER NOT NULL,
    step         TEXT NOT NULL,
    reason       TEXT NOT NULL,
    formation_id TEXT NOT NULL,
    degraded_at  INTEGER NOT NULL,
    reformed_at  INTEGER,                       -- set by `mnemos degraded reform`
    PRIMARY KEY (session_id, agent_id, after_seq, upto_seq, step)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS degraded_windows_newest ON degraded_windows (degraded_at);
"""
