"""PostgreSQL holds a lexeme of at most 2046 UTF-8 bytes: a longer word (legal input, 1,100
Cyrillic letters are 2,200 bytes) is left out of the text index and of the tsquery, as
to_tsvector leaves it out, instead of failing the commit or the search."""

from __future__ import annotations

import pytest

from memory.store.postgres import PostgresStore
from memory.store.postgres.codec import text_columns
from memory.store.postgres.search import tsquery
from tests.conftest import fresh_schema
from tests.store.builders import Former, add, unit, user_filter

pytestmark = pytest.mark.postgres

LONG = "а" * 1100  # Cyrillic a: 1,100 characters, 2,200 bytes
LONGEST = "я" * 1023  # 2,046 bytes: the longest lexeme PostgreSQL holds


async def test_a_word_too_long_for_a_lexeme_is_stored_and_searched_without_failing(
    postgres_dsn: str,
) -> None:
    store = PostgresStore(fresh_schema(postgres_dsn), pool_size=2)
    await store.setup()
    try:
        former = await Former(store).start(messages=1)
        await former.form(
            add("f1", f"Alice's code word is {LONG}", unit(1, 0)),
            add("f2", f"Bob's code word is {LONGEST}", unit(0, 1)),
        )
        # The long word finds nothing (it is in no index), and never fails the search.
        assert await store.text_search(LONG, user_filter(), limit=5) == []
        # The fact's other words still find it, with the long word in the same query.
        hits = await store.text_search(f"Alice {LONG}", user_filter(), limit=5)
        assert [h.fact.fact_id for h in hits] == ["f1"]
        # A word at the limit is a lexeme like any other.
        hits = await store.text_search(LONGEST, user_filter(), limit=5)
        assert [h.fact.fact_id for h in hits] == ["f2"]
    finally:
        await store.close()


def test_both_sides_leave_out_the_same_words() -> None:
    """The index and the query drop exactly the stems PostgreSQL cannot hold; a fact's length
    (BM25's) still counts every word, as the other backends count it."""
    columns = text_columns(f"code {LONG} {LONGEST}")
    assert columns["terms"] == ["code", LONGEST]
    assert columns["term_count"] == 3
    stems, match = tsquery(f"code {LONG}")
    assert stems == ["code"] and match == "'code'"
    assert tsquery(LONG) == ([], None)
