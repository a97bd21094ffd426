"""`mnemos reembed`, as an operator runs it: a store built with another model is switched to the
configured one (local MiniLM), resuming what an interrupted run left, and a second run does
nothing. SQLite store in a temporary directory, no Temporal server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from cli.app import app
from memory.embedding.local import DIMENSION, MODEL, LocalMiniLMEmbedder
from memory.models import FactFilter
from memory.store.sqlite import SQLiteStore
from tests.cli.conftest import free_port
from tests.store.builders import Former, add, unit

runner = CliRunner()
OLD = "test-model"


async def _old_store(path: Path) -> None:
    """Three facts embedded with a 4-d test model; one already has its MiniLM side vector, as an
    interrupted run would have left it."""
    store = SQLiteStore(path)
    await store.setup()
    former = await Former(store, agent_id="eve").start()
    await former.form(
        add("f1", "Alice rides her bike to work", unit(1, 0)),
        add("f2", "Alice plays chess on Fridays", unit(0, 1)),
        add("f3", "Alice is allergic to cats", unit(0, 0, 1)),
    )
    first = (await store.reembed_pending(MODEL, DIMENSION, limit=1))[0]
    embedder = LocalMiniLMEmbedder()
    vector = (await embedder.embed([first.content])).vectors[0]
    await store.put_reembedded(MODEL, DIMENSION, [(first, vector)])
    await embedder.close()
    await store.close()


async def _search(path: Path, text: str) -> tuple[tuple[str, int] | None, list[str]]:
    store = SQLiteStore(path)
    await store.setup()
    embedder = LocalMiniLMEmbedder()
    query = (await embedder.embed([text])).vectors[0]
    flt = FactFilter(agent_id="eve", user_id="u1", include_agent_scope=True)
    hits = await store.vector_search(np.asarray(query), flt, limit=1)
    meta = await store.embedding_meta()
    await embedder.close()
    await store.close()
    return meta, [h.fact.content for h in hits]


def test_reembed_switches_the_store_to_the_configured_model(tmp_path: Path) -> None:
    db = tmp_path / "mnemos.db"
    asyncio.run(_old_store(db))
    env = {
        "MNEMOS_STORE__SQLITE_PATH": str(db),
        "MNEMOS_TEMPORAL__ADDRESS": f"127.0.0.1:{free_port()}",
        "MNEMOS_MODELS__PROVIDER": "heuristic",
        "MNEMOS_EMBEDDING__PROVIDER": "local",
    }

    result = runner.invoke(app, ["reembed", "--batch", "1"], env=env)

    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.strip() == (
        f"switched 3 facts from {OLD}/4 to {MODEL}/{DIMENSION} (2 embedded by this run, 1 earlier)"
    )
    meta, found = asyncio.run(_search(db, "Who is allergic to cats?"))
    assert meta == (MODEL, DIMENSION)
    assert found == ["Alice is allergic to cats"]

    again = runner.invoke(app, ["reembed", "--json"], env=env)
    assert again.exit_code == 0, again.stdout + again.stderr
    report = json.loads(again.stdout)
    assert (report["switched"], report["embedded"], report["total"]) == (False, 0, 3)
