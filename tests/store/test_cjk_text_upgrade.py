"""A store written before CJK runs were split (memory.store.rules.text.split_cjk) finds its
Chinese and Japanese facts by a word inside them after the first start of this version: SQLite
splits the text its FTS5 index holds (and, noted by its triggers, what a process of the previous
version writes later), PostgreSQL's migration 19 computes the facts' terms anew, MongoDB fills
their CJK terms once."""

from __future__ import annotations

import re
import sqlite3
import unicodedata
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pymongo import AsyncMongoClient

from memory.store.base import MemoryStore
from memory.store.mongo import MongoStore
from memory.store.mongo.indexes import CJK_TERMS, TEXT_INDEX, VECTOR_INDEX
from memory.store.postgres import PostgresStore
from memory.store.rules.text import fold, split_cjk
from memory.store.sqlite import SQLiteStore
from tests.conftest import fresh_schema
from tests.store.builders import Former, add, unit, user_filter

CONTENTS = {"zh": "爱丽丝住在北京", "ja": "東京に住んでいます", "en": "Carol lives in Berlin"}
# A word inside each fact, as asked (the whole run found it before the upgrade too).
WORDS = {"北京": ["zh"], "東京": ["ja"], "Berlin": ["en"], "爱丽丝住在北京": ["zh"]}

# The text index's triggers as schemas 12 to 17 made them: they noted an unfolded text only.
SCHEMA_17_TRIGGERS = """
DROP TRIGGER facts_fts_insert; DROP TRIGGER facts_fts_update;
CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, content)
        VALUES (new.rowid, coalesce(new.search_text, new.content));
END;
CREATE TRIGGER facts_fts_update AFTER UPDATE OF content, search_text ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content)
        VALUES ('delete', old.rowid, coalesce(old.search_text, old.content));
    INSERT INTO facts_fts (rowid, content)
        VALUES (new.rowid, coalesce(new.search_text, new.content));
END;
UPDATE meta SET value = '17' WHERE key = 'schema_version';
"""


async def _form(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(*(add(k, c, unit(1, i)) for i, (k, c) in enumerate(CONTENTS.items())))


async def _found(store: MemoryStore) -> dict[str, list[str]]:
    return {
        word: [h.fact.fact_id for h in await store.text_search(word, user_filter(), limit=5)]
        for word in WORDS
    }


def _unsplit_sqlite(conn: sqlite3.Connection, fact_id: str, content: str) -> None:
    """What a process of schema 11 to 17 writes: the content, its search_text its mere fold."""
    conn.execute(
        "UPDATE facts SET content = ?, search_text = ? WHERE fact_id = ?",
        (content, fold(content), fact_id),
    )


async def test_a_schema_17_sqlite_file_finds_a_cjk_word_after_a_start(tmp_path: Path) -> None:
    path = tmp_path / "mnemos.db"
    store = SQLiteStore(path)
    await store.setup()
    try:
        await _form(store)
    finally:
        await store.close()
    with closing(sqlite3.connect(path, autocommit=True)) as conn:  # as schema 17 left it
        conn.executescript(SCHEMA_17_TRIGGERS)
        for fact_id in ("zh", "ja"):
            _unsplit_sqlite(conn, fact_id, CONTENTS[fact_id])
    store = SQLiteStore(path)
    await store.setup()
    try:
        assert await _found(store) == WORDS
    finally:
        await store.close()
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("INSERT INTO facts_fts (facts_fts, rank) VALUES ('integrity-check', 1)")
    with closing(sqlite3.connect(path)) as conn, conn:  # the previous version writes, noted now
        _unsplit_sqlite(conn, "zh", "爱丽丝住在上海")
    store = SQLiteStore(path)
    await store.setup()
    try:
        found = [h.fact.fact_id for h in await store.text_search("上海", user_filter(), limit=5)]
    finally:
        await store.close()
    assert found == ["zh"]


@pytest.mark.postgres
async def test_a_postgres_database_finds_a_cjk_word_after_migration_19(postgres_dsn: str) -> None:
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    try:
        await _form(store)
    finally:
        await store.close()
    with psycopg.connect(dsn, autocommit=True) as conn:  # as version 18 indexed them
        for fact_id in ("zh", "ja"):
            conn.execute(
                "UPDATE facts SET terms = array_to_tsvector(%s), term_count = 1, "
                "term_repeats = NULL WHERE fact_id = %s",
                ([fold(CONTENTS[fact_id])], fact_id),
            )
        conn.execute("DELETE FROM schema_migrations WHERE version >= 19")
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    try:
        assert await _found(store) == WORDS
    finally:
        await store.close()


@pytest.mark.mongo
async def test_a_mongo_database_finds_a_cjk_word_after_a_start(mongo_uri: str) -> None:
    database = f"t_{uuid.uuid4().hex[:12]}"
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_uri)
    try:
        store = MongoStore(client, database, atlas_search="off")
        await store.setup()
        await _form(store)
        # As the previous version stored them: no CJK terms, and no fill done.
        await client[database].facts.update_many({}, {"$unset": {CJK_TERMS: ""}})
        await client[database].meta.delete_many({"_id": "cjk_terms_filled"})
        store = MongoStore(client, database, atlas_search="off")
        await store.setup()
        assert await _found(store) == WORDS
    finally:
        await client.close()


@pytest.mark.mongo
async def test_atlas_search_finds_a_cjk_word_as_the_fallback_does() -> None:
    from tests.mongo_server import running_mongoeco

    async with running_mongoeco() as eco:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(eco.uri)
        database = f"t_{uuid.uuid4().hex[:12]}"
        try:
            fallback = MongoStore(client, database, atlas_search="off")
            await fallback.setup()
            await _form(fallback)
            assert await eco.create_search_indexes(database, 4) == [VECTOR_INDEX, TEXT_INDEX]
            atlas = MongoStore(client, database, atlas_search="on")
            await atlas.setup()
            assert await _found(atlas) == await _found(fallback) == WORDS
        finally:
            await client.close()


# Kana voicing kept by the fold (rules.text.fold): a store that folded it off finds "バス" (bus)
# by "ハス" (lotus) until its start folds its kana facts anew.
KANA = {"bus": "駅からバスに乗ります", "lotus": "池にハスが咲いています"}


def _unvoiced(text: str) -> str:
    """The fold of before: every combining mark off, kana voicing too."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _old_words(text: str) -> list[str]:
    return re.findall(r"\w+", split_cjk(_unvoiced(text)))


async def _form_kana(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(*(add(k, c, unit(1, i)) for i, (k, c) in enumerate(KANA.items())))


async def _bus(store: MemoryStore) -> list[str]:
    return [h.fact.fact_id for h in await store.text_search("バス", user_filter(), limit=5)]


async def test_a_schema_18_sqlite_file_tells_voiced_kana_apart_after_a_start(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mnemos.db"
    store = SQLiteStore(path)
    await store.setup()
    try:
        await _form_kana(store)
    finally:
        await store.close()
    with closing(sqlite3.connect(path)) as conn, conn:  # as schema 18 folded them
        for fact_id, content in KANA.items():
            conn.execute(
                "UPDATE facts SET search_text = ? WHERE fact_id = ?",
                (split_cjk(_unvoiced(content)), fact_id),
            )
        conn.execute("UPDATE meta SET value = '18' WHERE key = 'schema_version'")
    store = SQLiteStore(path)
    await store.setup()
    try:
        assert await _bus(store) == ["bus"]
    finally:
        await store.close()


@pytest.mark.postgres
async def test_a_postgres_database_tells_voiced_kana_apart_after_migration_20(
    postgres_dsn: str,
) -> None:
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    try:
        await _form_kana(store)
    finally:
        await store.close()
    with psycopg.connect(dsn, autocommit=True) as conn:  # as version 19 indexed them
        for fact_id, content in KANA.items():
            words = _old_words(content)
            conn.execute(
                "UPDATE facts SET terms = array_to_tsvector(%s), term_count = %s, "
                "term_repeats = NULL WHERE fact_id = %s",
                (sorted(set(words)), len(words), fact_id),
            )
        conn.execute("DELETE FROM schema_migrations WHERE version >= 20")
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    try:
        assert await _bus(store) == ["bus"]
    finally:
        await store.close()


@pytest.mark.mongo
async def test_a_mongo_database_tells_voiced_kana_apart_after_a_start(mongo_uri: str) -> None:
    database = f"t_{uuid.uuid4().hex[:12]}"
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_uri)
    try:
        store = MongoStore(client, database, atlas_search="off")
        await store.setup()
        await _form_kana(store)
        for fact_id, content in KANA.items():  # as the previous version stored them
            words = list(dict.fromkeys(_old_words(content)))
            await client[database].facts.update_one({"_id": fact_id}, {"$set": {CJK_TERMS: words}})
        await client[database].meta.delete_many({"_id": "cjk_terms_kana_voiced"})
        store = MongoStore(client, database, atlas_search="off")
        await store.setup()
        assert await _bus(store) == ["bus"]
    finally:
        await client.close()
