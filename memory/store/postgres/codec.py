"""Conversions between PostgreSQL rows and the domain models: facts, reflections and blobs are
stored whole as JSONB (``body``) beside the columns queries use."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from memory.dates import in_offset
from memory.models import ConsolidatedMemory, Fact, Reflection
from memory.said import split
from memory.store.base import Vector
from memory.store.postgres.pool import Row
from memory.store.records import blob_said_from, history_of, known, stored_history
from memory.store.rules.text import stemmed_tokens

# Fields kept out of the body: touched by searches (access, in fact_access: schema migration 4)
# or by consolidation (absorbed), or newer than a process of the previous version reads in a
# body (said_utc_offset_minutes: migration 13; the body carries it inside said_at, see
# fact_body). FACT_SELECT reads a fact of ``facts AS f``; its access fields are looked up for
# the rows returned only.
_FACT_COLUMNS = {"access_count", "last_accessed_at", "said_utc_offset_minutes"}
_ACCESS = "(SELECT a.{} FROM fact_access AS a WHERE a.fact_id = f.fact_id)"
FACT_SELECT = (
    f"f.body, f.said_utc_offset_minutes, "
    f"coalesce({_ACCESS.format('access_count')}, 0) AS access_count, "
    f"{_ACCESS.format('last_accessed_at')} AS last_accessed_at"
)
# The access upsert: (fact_id, access_count, last_accessed_at) rows of existing facts.
UPSERT_ACCESS = (
    "INSERT INTO fact_access AS a (fact_id, access_count, last_accessed_at) {rows} "
    "ON CONFLICT (fact_id) DO UPDATE SET {counts}, last_accessed_at = excluded.last_accessed_at"
)


def fact_body(fact: Fact) -> Jsonb:
    """The body of a fact: said_at on its speaker's clock ("2024-05-07T22:30:00-05:00"), as each
    revision's in its history, so that the offset travels with the time it belongs to. A process
    of the previous version that rewrites the body (a roll) writes its own said_at and leaves
    the offset column alone: the column alone would then give the new time an older clock."""
    body = fact.model_dump(mode="json", exclude=_FACT_COLUMNS)
    if fact.said_at is not None and fact.said_utc_offset_minutes:
        body["said_at"] = in_offset(fact.said_at, fact.said_utc_offset_minutes).isoformat()
    return Jsonb(body | {"history": stored_history(fact.history, datetime.isoformat)})


def fact_from_row(row: Row) -> Fact:
    """A row selected with FACT_SELECT."""
    body = row["body"]
    said = body.get("said_at")
    said_at, carried = split(datetime.fromisoformat(said) if isinstance(said, str) else said)
    # The offset inside said_at is the body's own (fact_body, or a previous version's process
    # committing a payload that carried it). A body in UTC takes the column's: the process of
    # the version before this one wrote the offset only there, its bodies always in UTC.
    offset = row["said_utc_offset_minutes"] if carried is None else carried
    return Fact.model_validate(
        {
            **known(Fact, body),
            "history": history_of(body.get("history", ())),
            "said_at": said_at,
            "said_utc_offset_minutes": offset,
            "access_count": row["access_count"],
            "last_accessed_at": row["last_accessed_at"],
        }
    )


# The longest lexeme PostgreSQL holds (MAXSTRLEN - 1 bytes): a longer one fails array_to_tsvector
# and a tsquery. Such a word (legal input: 1,100 Cyrillic letters are 2,200 bytes) is left out of
# the index and of the query, as to_tsvector leaves it out: it finds nothing, and fails nothing.
MAX_LEXEME_BYTES = 2046


def is_lexeme(stem: str) -> bool:
    """Whether PostgreSQL can hold the stem as a lexeme: not empty, at most MAX_LEXEME_BYTES."""
    return bool(stem) and len(stem.encode()) <= MAX_LEXEME_BYTES


def text_columns(content: str) -> dict[str, object]:
    """The text-search columns of a fact (named parameters): its lexemes (``terms``, under the
    GIN index: its Porter stems, each once) and what BM25 counts of it beyond them (schema
    migration 7): the number of its stemmed tokens (the ``len(words)`` of
    memory.store.rules.text) and the count of each stem it holds more than once."""
    tokens = stemmed_tokens(content)
    freqs = Counter(term for term in tokens if is_lexeme(term))  # the length counts every word
    repeats = {term: n for term, n in freqs.items() if n > 1}
    return {
        "terms": list(freqs),
        "term_count": len(tokens),
        "term_repeats": Jsonb(repeats) if repeats else None,
    }


def vector_param(vector: Vector | Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.asarray(vector, dtype=np.float32).reshape(-1)


def from_vector(value: Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A pgvector value (pgvector.Vector, as the registered loader returns it) as float32."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def reflection_body(r: Reflection) -> Jsonb:
    return Jsonb(r.model_dump(mode="json", exclude={"absorbed_into_version"}))


def reflection_from_row(row: Row) -> Reflection:
    return Reflection.model_validate(
        {**known(Reflection, row["body"]), "absorbed_into_version": row["absorbed_into_version"]}
    )


def consolidated_body(blob: ConsolidatedMemory) -> Jsonb:
    """A blob's body: said_from is its column's (schema 17), out of the body a process of the
    previous version reads."""
    return Jsonb(blob.model_dump(mode="json", exclude={"said_from"}))


def consolidated_from_row(row: Row) -> ConsolidatedMemory:
    body = known(ConsolidatedMemory, row["body"])
    said_from = blob_said_from(row, lambda value: value)
    return ConsolidatedMemory.model_validate({**body, "said_from": said_from})
