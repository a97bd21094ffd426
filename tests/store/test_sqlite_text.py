"""SQLite text search: the shared tokenizer stems exactly as the FTS5 index does, so a stem match
that FTS5 finds is also counted by the shared BM25 (computed over the caller's facts)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memory.store.rules.text import stemmed_tokens
from memory.store.sqlite import SQLiteStore
from tests.store.builders import Former, add, unit, user_filter

CONTENTS = ["Alice paints sunsets", "Bob painted the old garden fence twice", "Carol runs"]


async def test_stems_are_the_fts5_index_terms_and_stem_matches_score(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    former = await Former(store).start()
    await former.form(*(add(f"f{i}", c, unit(1, i)) for i, c in enumerate(CONTENTS)))

    hits = await store.text_search("who painted", user_filter(), limit=5)
    await store.close()

    conn = sqlite3.connect(tmp_path / "mnemos.db")
    vocab = {t for (t,) in conn.execute("SELECT term FROM facts_fts_vocab")}
    conn.close()
    assert {t for c in CONTENTS for t in stemmed_tokens(c)} == vocab
    # "painted" matches both forms through the stem; "who" matches nothing.
    assert {h.fact.fact_id for h in hits} == {"f0", "f1"}
    assert all(h.score > 0 for h in hits)
