"""SQLite text search rescoring: it reads FTS5's own N and average length, and stems like FTS5."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory.store.rules.text import stemmed_tokens, token_count
from memory.store.sqlite import SQLiteStore
from memory.store.sqlite.text import _varint, index_stats
from tests.store.builders import Former, add, unit, user_filter

CONTENTS = ["Alice paints sunsets", "Bob painted the old garden fence twice", "Carol runs"]


def test_varint_reads_sqlite_multibyte_values() -> None:
    assert _varint(bytes([0x1D]), 0) == (29, 1)
    assert _varint(bytes([0x81, 0x00, 0x05]), 0) == (128, 2)
    assert _varint(bytes([0xFF] * 8 + [0x01]), 0) == ((2**56 - 1) << 8 | 1, 9)


async def test_rescoring_uses_the_fts5_index_statistics(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    former = await Former(store).start()
    await former.form(*(add(f"f{i}", c, unit(1, i)) for i, c in enumerate(CONTENTS)))

    hits = await store.text_search("who painted", user_filter(), limit=5)
    await store.close()

    conn = sqlite3.connect(tmp_path / "mnemos.db")
    rows, avg = index_stats(conn)
    vocab = {t for (t,) in conn.execute("SELECT term FROM facts_fts_vocab")}
    conn.close()
    assert rows == 3
    assert avg == pytest.approx(sum(token_count(c) for c in CONTENTS) / 3)
    assert {t for c in CONTENTS for t in stemmed_tokens(c)} == vocab
    # "painted" matches both forms through the stem; "who" matches nothing.
    assert {h.fact.fact_id for h in hits} == {"f0", "f1"}
    assert all(h.score > 0 for h in hits)
