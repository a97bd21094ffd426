"""The PostgreSQL schema, as versioned migrations (``MIGRATIONS``, applied by
memory.store.postgres.schema.migrate): one SQL script each, never edited once shipped.

The domain records (facts, reflections, blobs) are stored whole as JSONB (``body``), beside the
columns the queries filter and sort on, so a field added to a model is stored without a column;
a column is added when a query needs one. A fact's access count and time, the only fields that
change on a read, live in ``fact_access`` (migration 4). Vectors are pgvector ``vector`` values,
under an HNSW index per dimension, created when the first vectors fix it (postgres/hnsw.py).
Text search uses ``terms``: the Porter stems of the content (memory.store.rules.text, what
FTS5's porter tokenizer indexes), as a tsvector under GIN."""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: the whole store.
    """
    CREATE EXTENSION IF NOT EXISTS vector;
    CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE agents (agent_id text PRIMARY KEY, config jsonb NOT NULL);
    CREATE TABLE sessions (
        session_id      text PRIMARY KEY,
        created_at      timestamptz NOT NULL,
        last_seq        bigint NOT NULL DEFAULT 0,
        last_message_at timestamptz
    );
    -- ord: join order, the order SessionInfo lists users and agents in.
    CREATE TABLE session_users (
        ord        bigint GENERATED ALWAYS AS IDENTITY,
        session_id text NOT NULL REFERENCES sessions ON DELETE CASCADE,
        user_id    text NOT NULL,
        PRIMARY KEY (session_id, user_id)
    );
    CREATE TABLE session_agents (
        ord                     bigint GENERATED ALWAYS AS IDENTITY,
        session_id              text NOT NULL REFERENCES sessions ON DELETE CASCADE,
        agent_id                text NOT NULL,
        cursor_seq              bigint NOT NULL DEFAULT 0,
        pending_messages        bigint NOT NULL DEFAULT 0,
        pending_weighted_tokens double precision NOT NULL DEFAULT 0,
        last_message_at         timestamptz,
        formations              bigint NOT NULL DEFAULT 0,
        ended_at                timestamptz,
        purged                  boolean NOT NULL DEFAULT false,
        PRIMARY KEY (session_id, agent_id)
    );
    CREATE INDEX session_agents_cold ON session_agents (last_message_at, session_id, agent_id)
        WHERE pending_messages > 0;
    CREATE INDEX session_agents_to_purge ON session_agents (ended_at, session_id, agent_id)
        WHERE ended_at IS NOT NULL AND NOT purged;
    CREATE INDEX session_agents_agent ON session_agents (agent_id);
    CREATE TABLE session_agent_users (
        ord        bigint GENERATED ALWAYS AS IDENTITY,
        session_id text NOT NULL REFERENCES sessions ON DELETE CASCADE,
        agent_id   text NOT NULL,
        user_id    text NOT NULL,
        PRIMARY KEY (session_id, agent_id, user_id)
    );
    CREATE TABLE messages (
        session_id      text NOT NULL REFERENCES sessions ON DELETE CASCADE,
        seq             bigint NOT NULL,
        message_id      text NOT NULL,
        role            text NOT NULL,
        content         text NOT NULL,
        created_at      timestamptz NOT NULL,
        user_id         text,
        name            text,
        agent_id        text,
        weighted_tokens double precision NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, message_id)
    );
    CREATE TABLE facts (
        ord              bigint GENERATED ALWAYS AS IDENTITY,
        fact_id          text PRIMARY KEY,
        agent_id         text NOT NULL,
        user_id          text,
        scope            text NOT NULL CHECK (scope IN ('user', 'agent')),
        hash             text NOT NULL,
        updated_at       timestamptz NOT NULL,
        invalidated_at   timestamptz,
        embedding        vector NOT NULL,
        embedding_model  text NOT NULL,
        terms            tsvector NOT NULL,
        body             jsonb NOT NULL,        -- the Fact, but its access fields
        access_count     bigint NOT NULL DEFAULT 0,
        last_accessed_at timestamptz
    );
    -- Exact duplicates: one valid fact per (agent, user, scope, normalised content).
    CREATE UNIQUE INDEX facts_hash ON facts (agent_id, coalesce(user_id, ''), scope, hash)
        WHERE invalidated_at IS NULL;
    CREATE INDEX facts_agent_hash ON facts (agent_id, hash);
    CREATE INDEX facts_scope ON facts (agent_id, scope, user_id) WHERE invalidated_at IS NULL;
    CREATE INDEX facts_recent ON facts (agent_id, updated_at) WHERE invalidated_at IS NULL;
    CREATE INDEX facts_user ON facts (user_id);
    CREATE INDEX facts_terms ON facts USING gin (terms) WHERE invalidated_at IS NULL;
    CREATE TABLE fact_reembed (
        fact_id   text PRIMARY KEY,
        model     text NOT NULL,
        hash      text NOT NULL,
        embedding vector NOT NULL
    );
    CREATE TABLE reflections (
        ord                   bigint GENERATED ALWAYS AS IDENTITY,
        reflection_id         text PRIMARY KEY,
        scope_key             text NOT NULL,
        scope                 text NOT NULL,
        agent_id              text NOT NULL,
        user_id               text,
        session_id            text,
        formed_at             timestamptz NOT NULL,
        absorbed_into_version bigint,
        body                  jsonb NOT NULL      -- the Reflection, but absorbed_into_version
    );
    CREATE INDEX reflections_key ON reflections (scope_key, formed_at, ord);
    CREATE INDEX reflections_session ON reflections (session_id) WHERE session_id IS NOT NULL;
    CREATE INDEX reflections_user ON reflections (user_id) WHERE user_id IS NOT NULL;
    CREATE TABLE consolidated (
        scope_key  text PRIMARY KEY,
        scope      text NOT NULL,
        agent_id   text NOT NULL,
        user_id    text,
        session_id text,
        version    bigint NOT NULL,
        body       jsonb NOT NULL
    );
    CREATE INDEX consolidated_session ON consolidated (session_id) WHERE session_id IS NOT NULL;
    CREATE TABLE formation_commits (
        formation_id text PRIMARY KEY,
        committed_at timestamptz NOT NULL,
        result       jsonb NOT NULL
    );
    CREATE TABLE embedding_cache (
        model     text NOT NULL,
        text_hash text NOT NULL,
        vector    vector NOT NULL,
        PRIMARY KEY (model, text_hash)
    );
    CREATE INDEX embedding_cache_hash ON embedding_cache (text_hash);
    CREATE TABLE scope_versions (key text PRIMARY KEY, version bigint NOT NULL);
    CREATE TABLE api_keys (
        key_id     text PRIMARY KEY,
        record     jsonb NOT NULL,
        created_at timestamptz NOT NULL
    );
    CREATE TABLE erasures (
        agent_key    text NOT NULL,
        user_id      text NOT NULL,
        epoch        bigint NOT NULL,
        forgotten_at timestamptz NOT NULL,
        counts       jsonb NOT NULL,
        PRIMARY KEY (agent_key, user_id)
    );
    """,
    # 2: vectors stay in the row (pgvector's advice): a scan that computes distances would
    # otherwise fetch every vector from the TOAST table (3 buffers a fact instead of one); the
    # JSONB body is what TOAST compresses or moves out instead. New and rewritten rows.
    """
    ALTER TABLE facts ALTER COLUMN embedding SET STORAGE PLAIN;
    ALTER TABLE fact_reembed ALTER COLUMN embedding SET STORAGE PLAIN;
    """,
    # 3: the context FIFO selects by when a fact was said (MemoryStore.recent_facts): said_at
    # gets a column, filled from the bodies already stored (null for facts without one, which
    # fall back to updated_at), and an index on the recency the query orders by.
    """
    ALTER TABLE facts ADD COLUMN said_at timestamptz;
    UPDATE facts SET said_at = (body->>'said_at')::timestamptz WHERE body->>'said_at' IS NOT NULL;
    CREATE INDEX facts_said ON facts (agent_id, (coalesce(said_at, updated_at)))
        WHERE invalidated_at IS NULL;
    """,
    # 4: access counts in a table of their own. Every search marks the facts it returns; as
    # columns of facts, each mark wrote a new version of the whole row (its vector and body)
    # into every index of facts (no room for a HOT update beside a 1.5 kB vector): an HNSW
    # insertion (~5 ms) per fact returned, and a graph that filled with dead entries.
    """
    CREATE TABLE fact_access (
        fact_id          text PRIMARY KEY REFERENCES facts ON DELETE CASCADE,
        access_count     bigint NOT NULL,
        last_accessed_at timestamptz
    ) WITH (fillfactor = 70);
    INSERT INTO fact_access (fact_id, access_count, last_accessed_at)
        SELECT fact_id, access_count, last_accessed_at FROM facts
        WHERE access_count <> 0 OR last_accessed_at IS NOT NULL;
    ALTER TABLE facts DROP COLUMN access_count, DROP COLUMN last_accessed_at;
    """,
    # 5: the content beside the columns text search reads. Text search scores every candidate
    # by its content; read from the body, each candidate cost a TOAST fetch and the
    # decompression of the whole body (a row holding a vector leaves the body no room inline).
    """
    ALTER TABLE facts ADD COLUMN content text GENERATED ALWAYS AS (body ->> 'content') STORED;
    """,
    # 6: how many valid facts each (agent, scope, user) holds: text search's N (BM25's
    # collection size within the filter), which counting cost a scan of the caller's facts
    # per search (~10-40 ms at 100k). Statement triggers on facts insert deltas, never update
    # a counter row: concurrent formations of one agent never wait for or conflict on one.
    # A statement now and then folds its keys' deltas into one row, so a read sums a few rows.
    # user_key: the user of a user-scoped fact, '' for agent scope (which ignores user_id).
    """
    CREATE TABLE fact_counts (
        agent_id text NOT NULL,
        scope    text NOT NULL,
        user_key text NOT NULL,
        n        bigint NOT NULL
    );
    CREATE INDEX fact_counts_key ON fact_counts (agent_id, scope, user_key);
    CREATE FUNCTION fact_counts_apply(deltas jsonb) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO fact_counts (agent_id, scope, user_key, n)
        SELECT d.agent_id, d.scope, d.user_key, d.n
        FROM jsonb_to_recordset(deltas) AS d(agent_id text, scope text, user_key text, n bigint)
        WHERE d.n <> 0;
        IF random() < 0.05 THEN
            WITH gone AS (
                DELETE FROM fact_counts AS c
                USING jsonb_to_recordset(deltas) AS d(agent_id text, scope text, user_key text)
                WHERE c.agent_id = d.agent_id AND c.scope = d.scope AND c.user_key = d.user_key
                RETURNING c.agent_id, c.scope, c.user_key, c.n
            )
            INSERT INTO fact_counts (agent_id, scope, user_key, n)
            SELECT agent_id, scope, user_key, sum(n) FROM gone GROUP BY 1, 2, 3;
        END IF;
    END $$;
    CREATE FUNCTION fact_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM fact_counts_apply(coalesce((SELECT jsonb_agg(k) FROM (
            SELECT agent_id, scope, CASE WHEN scope = 'user' THEN user_id ELSE '' END
                AS user_key, count(*) AS n
            FROM new_facts WHERE invalidated_at IS NULL GROUP BY 1, 2, 3) AS k), '[]'));
        RETURN NULL;
    END $$;
    CREATE FUNCTION fact_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM fact_counts_apply(coalesce((SELECT jsonb_agg(k) FROM (
            SELECT agent_id, scope, CASE WHEN scope = 'user' THEN user_id ELSE '' END
                AS user_key, -count(*) AS n
            FROM old_facts WHERE invalidated_at IS NULL GROUP BY 1, 2, 3) AS k), '[]'));
        RETURN NULL;
    END $$;
    CREATE FUNCTION fact_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM fact_counts_apply(coalesce((SELECT jsonb_agg(k) FROM (
            SELECT agent_id, scope, user_key, sum(d) AS n FROM (
                SELECT agent_id, scope, CASE WHEN scope = 'user' THEN user_id ELSE '' END
                    AS user_key, 1 AS d
                FROM new_facts WHERE invalidated_at IS NULL
                UNION ALL
                SELECT agent_id, scope, CASE WHEN scope = 'user' THEN user_id ELSE '' END,
                    -1
                FROM old_facts WHERE invalidated_at IS NULL) AS u
            GROUP BY 1, 2, 3 HAVING sum(d) <> 0) AS k), '[]'));
        RETURN NULL;
    END $$;
    CREATE TRIGGER fact_counts_insert AFTER INSERT ON facts REFERENCING NEW TABLE AS new_facts
        FOR EACH STATEMENT EXECUTE FUNCTION fact_counts_insert();
    CREATE TRIGGER fact_counts_delete AFTER DELETE ON facts REFERENCING OLD TABLE AS old_facts
        FOR EACH STATEMENT EXECUTE FUNCTION fact_counts_delete();
    CREATE TRIGGER fact_counts_update AFTER UPDATE ON facts
        REFERENCING OLD TABLE AS old_facts NEW TABLE AS new_facts
        FOR EACH STATEMENT EXECUTE FUNCTION fact_counts_update();
    INSERT INTO fact_counts (agent_id, scope, user_key, n)
        SELECT agent_id, scope, CASE WHEN scope = 'user' THEN user_id ELSE '' END, count(*)
        FROM facts WHERE invalidated_at IS NULL GROUP BY 1, 2, 3;
    """,
    # 7: what BM25 counts of a fact beyond its terms: how many stemmed tokens it has
    # (term_count) and the stems it holds more than once, with their counts (term_repeats, NULL
    # for none; usually a few function words). Text search reads the query stems' counts in
    # SQL instead of fetching every candidate's content and stemming it (most of a search's
    # time at 100k facts). Both are read for every candidate, with the terms: they stay in the
    # row (MAIN), and the content and body are what TOAST moves out when a row outgrows its
    # ~2 kB (a 384-d vector alone is 1.5 kB): one moved out costs a TOAST fetch per candidate
    # and query stem (measured: 3x the buffer reads). Facts stored before keep NULLs until
    # rewritten; search counts theirs from their content.
    """
    ALTER TABLE facts ADD COLUMN term_count integer, ADD COLUMN term_repeats jsonb;
    ALTER TABLE facts ALTER COLUMN terms SET STORAGE MAIN,
        ALTER COLUMN term_repeats SET STORAGE MAIN;
    """,
    # 8: forget_user and export find a user's sessions by the messages carrying the user's id,
    # whatever their role (participants are only those who spoke with role "user").
    """
    CREATE INDEX IF NOT EXISTS messages_user ON messages (user_id, session_id)
        WHERE user_id IS NOT NULL;
    """,
    # 9: the lasting record of degraded windows (memory/degraded.py; a run's memo keeps its
    # newest only, until the namespace's retention deletes the run). Few rows (degrading is the
    # exception): listed newest first by the index; forget_user deletes by the key's session.
    """
    CREATE TABLE degraded_windows (
        session_id   text NOT NULL,
        agent_id     text NOT NULL,
        after_seq    bigint NOT NULL,
        upto_seq     bigint NOT NULL,
        step         text NOT NULL,
        reason       text NOT NULL,
        formation_id text NOT NULL,
        degraded_at  timestamptz NOT NULL,
        reformed_at  timestamptz,
        PRIMARY KEY (session_id, agent_id, after_seq, upto_seq, step)
    );
    CREATE INDEX degraded_windows_newest ON degraded_windows (degraded_at);
    """,
    # 10: whether a guest spoke in the session (memory.models.SessionInfo.has_guests: beside a
    # user, a group chat). The column only: with a constant default, a change of the catalog,
    # whose ACCESS EXCLUSIVE lock on sessions lasts no longer. Every setup fills it afterwards,
    # outside this transaction (mark_guests).
    """
    ALTER TABLE sessions ADD COLUMN has_guests boolean NOT NULL DEFAULT false;
    """,
    # 11: what a forget of a user under some agents kept in a shared session for the others,
    # not these agents' to form (SessionAgentState.withheld, memory.store.rules.withheld), as
    # JSON [[user, seq], ...]; a constant default: the catalog only, older rows withhold nothing.
    """
    ALTER TABLE session_agents ADD COLUMN withheld text NOT NULL DEFAULT '[]';
    """,
    # 12: the UTC offset each message's created_at was sent with, the speaker's clock that
    # relative dates count in (StoredMessage.utc_offset_minutes); nullable without a default:
    # the catalog only, older rows NULL (read as UTC).
    """
    ALTER TABLE messages ADD COLUMN utc_offset_minutes smallint;
    """,
    # 13: the UTC offset a fact was said in (Fact.said_utc_offset_minutes, memory.said), a
    # column beside the body, not in it: a process of the previous version reads the bodies
    # during a rolling upgrade, and Fact forbids unknown fields. Nullable without a default: the
    # catalog only, older rows NULL (UTC). Revisions keep theirs inside their said_at.
    """
    ALTER TABLE facts ADD COLUMN said_utc_offset_minutes smallint;
    """,
    # 14: vectors in the row unless they cannot fit (MAIN, not PLAIN): a row of a 3,072-value
    # model (12 KB) is larger than a page, which PLAIN refuses; MAIN keeps a vector that fits in
    # the row as PLAIN did (TOAST moves the JSONB body out first). The catalog only.
    """
    ALTER TABLE facts ALTER COLUMN embedding SET STORAGE MAIN;
    ALTER TABLE fact_reembed ALTER COLUMN embedding SET STORAGE MAIN;
    """,
    # 15: when the store inserted each fact (memory.store.rules.recheck: a commit's re-check
    # reads the facts inserted since its candidates were read, whatever their own updated_at
    # says: an imported fact keeps its source's). Added without a default (the catalog only;
    # older rows NULL: read by updated_at alone), then given one for the rows inserted from now
    # on by a process of the previous version, which knows no such column; this version's
    # inserts stamp their writer's clock, as updated_at. Indexed as facts_recent is.
    """
    ALTER TABLE facts ADD COLUMN IF NOT EXISTS inserted_at timestamptz;
    ALTER TABLE facts ALTER COLUMN inserted_at SET DEFAULT clock_timestamp();
    CREATE INDEX IF NOT EXISTS facts_inserted ON facts (agent_id, inserted_at)
        WHERE invalidated_at IS NULL;
    """,
    # 16: a commit's snapshot reads the agent's facts a person deleted (invalidated by no fact:
    # the body's invalidated_by null) since its earliest add was said: rare rows, found without
    # reading the replaced ones. The terms are PostgresDb.hand_deleted's.
    """
    CREATE INDEX IF NOT EXISTS facts_hand_deleted ON facts (agent_id, invalidated_at)
        WHERE invalidated_at IS NOT NULL AND (body->>'invalidated_by') IS NULL;
    """,
    # 17: when the earliest of what a blob holds was said (ConsolidatedMemory.said_from), beside the
    # body, as 13's: a process of the previous version reads the bodies during a rolling
    # upgrade and refuses a field it does not know; its writes (version and body) leave the
    # columns as they were, so said_from keeps the version it was written for
    # (memory.store.records.blob_said_from). The catalog only; older rows NULL (not known).
    """
    ALTER TABLE consolidated ADD COLUMN IF NOT EXISTS said_from timestamptz,
        ADD COLUMN IF NOT EXISTS said_from_version bigint;
    """,
    # 18: the memory switches each session's messages were recorded under
    # (SessionAgentState.switch_marks, memory/switch_marks.py), as JSON [[seq, user, agent],
    # ...]; a constant default: the catalog only, older rows none marked.
    """
    ALTER TABLE session_agents ADD COLUMN IF NOT EXISTS switch_marks text NOT NULL DEFAULT '[]';
    """,
    # 19: a run of CJK characters is split into bigrams (memory.store.rules.text.split_cjk), so
    # the facts holding one get their text columns anew: the splitting is Python's, done by
    # _split_cjk_terms after this statement, in its transaction (AFTER_MIGRATION); the SQL is
    # a no-op.
    """
    SELECT 1;
    """,
    # 20: the fold keeps kana voicing (memory.store.rules.text.fold: "バス" is not "ハス"), so
    # the facts holding kana get their text columns anew (_refold_kana, AFTER_MIGRATION); the SQL
    # is a no-op.
    """
    SELECT 1;
    """,
)
