"""SQLite's text index of the facts (FTS5 over each fact's folded text) and its upkeep at setup.

Schema 11 indexes each fact's content folded as the shared tokenizer folds it; schema 12's
triggers note what a schema-10 process writes unfolded, which the next setup folds
(``migrate_fts``, called inside setup's transaction by memory/store/sqlite/store.py). Schema 18
indexes the runs of CJK characters split into bigrams as the shared tokenizer splits them
(rules.text.split_cjk), and its triggers also note what a process of schema 11 to 17 writes
unsplit."""

from __future__ import annotations

import sqlite3

from memory.store.rules.text import CJK_CLASS, KANA_CLASS, index_text


def _not_ascii(text: str) -> str:
    """SQL: the text is not ASCII (its UTF-8 holds more bytes than characters)."""
    return f"length(CAST({text} AS BLOB)) > length({text})"


_CJK = f"[{CJK_CLASS}]"
_NOT_CJK_NOR_SPACE = f"[^ {CJK_CLASS}]"
_JAMO = "[\u1100-\u11ff\ua960-\ua97f\ud7b0-\ud7ff]"


def _unsplit(text: str) -> str:
    """SQL: the search_text may hold a run of CJK characters that split_cjk did not split (a
    process of schema 11 to 17 wrote its mere fold). split_cjk leaves every CJK character in a
    bigram or alone, between spaces, and a Hangul syllable composed; so three of them in a row,
    one beside another character, or a jamo is a text to split again. Some texts split already
    match too (an old jamo NFC leaves as it is): splitting them again changes nothing."""
    return (
        f"({text} GLOB '*{_CJK}{_CJK}{_CJK}*' OR {text} GLOB '*{_NOT_CJK_NOR_SPACE}{_CJK}*' "
        f"OR {text} GLOB '*{_CJK}{_NOT_CJK_NOR_SPACE}*' OR {text} GLOB '*{_JAMO}*')"
    )


# Schema 11, after ADDED_COLUMNS (its view names search_text): the text index of the facts. FTS5's
# unicode61 lowercases and takes the accent off a Latin letter, but keeps "ß", ligatures,
# subscripts, Greek accents and a letter of two marks ("ở") as written, where the shared tokenizer
# (memory.store.rules.text, what PostgreSQL indexes and every store's BM25 counts) folds them: it
# indexes each fact's content folded that way (rules.text.fold), the content itself when ASCII.
# External content: the view is what a 'rebuild' reads, the triggers keep the index equal to it.
# Schema 12: they also note in facts_refold the rows a process of schema 10 (which knows no
# search_text) left unfolded, by inserting a content that is not ASCII or changing a content, for
# the next setup to fold (migrate_fts); this version's writes fold what they write and note none.
# In the index's triggers, not in triggers of their own: what drops those (to take a file back to
# schema 10, whose column search_text no trigger may name then) drops these too.
# Schema 18: the search_text holds the runs of CJK characters split (search_text_of); the
# triggers also note a search_text a process of schema 11 to 17 wrote unsplit (_unsplit), for
# the next setup to split.
FTS_DDL = f"""
CREATE VIEW IF NOT EXISTS facts_search (rowid, content) AS
    SELECT rowid, coalesce(search_text, content) FROM facts;
CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts USING fts5 (
    content, content = 'facts_search', content_rowid = 'rowid', tokenize = 'porter unicode61'
);
-- Document frequency of each indexed (stemmed) term: text search rescores FTS5's candidates.
CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts_vocab USING fts5vocab (facts_fts, 'row');
CREATE TABLE IF NOT EXISTS facts_refold (rowid INTEGER PRIMARY KEY);
CREATE TRIGGER IF NOT EXISTS facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, content)
        VALUES (new.rowid, coalesce(new.search_text, new.content));
    INSERT OR IGNORE INTO facts_refold (rowid) SELECT new.rowid
        WHERE (new.search_text IS NULL AND {_not_ascii("new.content")})
            OR {_unsplit("new.search_text")};
END;
CREATE TRIGGER IF NOT EXISTS facts_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content)
        VALUES ('delete', old.rowid, coalesce(old.search_text, old.content));
END;
CREATE TRIGGER IF NOT EXISTS facts_fts_update AFTER UPDATE OF content, search_text ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content)
        VALUES ('delete', old.rowid, coalesce(old.search_text, old.content));
    INSERT INTO facts_fts (rowid, content)
        VALUES (new.rowid, coalesce(new.search_text, new.content));
    INSERT OR IGNORE INTO facts_refold (rowid) SELECT new.rowid
        WHERE (new.content IS NOT old.content AND new.search_text IS old.search_text
            AND (new.search_text IS NOT NULL OR {_not_ascii("new.content")}))
            OR {_unsplit("new.search_text")};
END;
"""

# The triggers of schema 11, which noted nothing, and the text index of schema 10 and before
# (content = 'facts': the contents as written), dropped before FTS_DDL makes them anew.
_DROP_FTS_TRIGGERS = """
DROP TRIGGER IF EXISTS facts_fts_insert;
DROP TRIGGER IF EXISTS facts_fts_delete;
DROP TRIGGER IF EXISTS facts_fts_update;
"""
_DROP_FTS = f"""{_DROP_FTS_TRIGGERS}
DROP TABLE IF EXISTS facts_fts_vocab;
DROP TABLE IF EXISTS facts_fts;
DROP VIEW IF EXISTS facts_search;
"""


def search_text_of(content: str) -> str | None:
    """facts.search_text of a content: its fold with its CJK runs split (rules.text.index_text:
    FTS5's unicode61 then finds the bigrams the shared tokenizer counts), None for ASCII (FTS5
    lowercases that itself)."""
    return None if content.isascii() else index_text(content)


def _refold(conn: sqlite3.Connection, where: str) -> None:
    """Set search_text to the fold of content where it is not, among the rows ``where``, in rowid
    ranges (none of them read by a statement still open while it changes)."""
    last = -1
    while batch := conn.execute(
        f"SELECT rowid, content, search_text FROM facts WHERE rowid > ? AND {where} "
        "ORDER BY rowid LIMIT 4096",
        (last,),
    ).fetchall():
        changed = [(text, r) for r, c, old in batch if (text := search_text_of(c)) != old]
        conn.executemany("UPDATE facts SET search_text = ? WHERE rowid = ?", changed)
        last = batch[-1][0]


def refold_kana(conn: sqlite3.Connection) -> None:
    """Schema 19: the search_text of the facts holding kana folded anew, once (a file of an
    older schema): their voicing is no longer folded off (rules.text.fold), "バス" is not "ハス".
    A process of the previous version writing during a rolling upgrade folds it off still: that
    fact is found by its unvoiced spelling until it is rewritten."""
    _refold(conn, f"content GLOB '*[{KANA_CLASS}]*'")


def _notes_unsplit(conn: sqlite3.Connection) -> bool:
    """Whether the file's triggers are schema 18's: they note the rows written unsplit."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'facts_fts_insert'").fetchone()
    return row is not None and "GLOB" in row[0]


def migrate_fts(conn: sqlite3.Connection) -> None:
    """Make the text index FTS_DDL's, inside setup's transaction, idempotently: a file of schema
    10 or before (or a new one) gains each fact's search_text and an index built anew from them;
    one of schema 18 has the rows its triggers noted folded (the update of a stale one re-indexes
    its row); one of schema 11 to 17 gains the noting triggers and has every row that may be
    stale checked, once (a process of schema 10 may have written it unfolded since the last
    start; before schema 18 no CJK run was split)."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'facts_fts'").fetchone()
    noted = "SELECT 1 FROM sqlite_master WHERE name = 'facts_refold'"
    if row is None or "facts_search" not in row[0]:
        conn.executescript(_DROP_FTS)  # first: no trigger re-indexes a row the fill below updates
        _refold(conn, "1")
        conn.executescript(FTS_DDL)
        conn.execute("INSERT INTO facts_fts (facts_fts) VALUES ('rebuild')")
    elif conn.execute(noted).fetchone() is not None and _notes_unsplit(conn):
        _refold(conn, "rowid IN (SELECT rowid FROM facts_refold)")
    else:
        conn.executescript(_DROP_FTS_TRIGGERS + FTS_DDL)
        _refold(conn, f"(search_text IS NOT NULL OR {_not_ascii('content')})")
    conn.execute("DELETE FROM facts_refold")
