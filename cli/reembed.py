"""`mnemos reembed`: switch the store to the configured embedding model and dimension."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from cli.common import JsonOption, emit, load_settings, run, store_of
from memory.embedding import make_embedder
from memory.reembed import ReembedResult
from memory.reembed import reembed as reembed_facts

Batch = Annotated[int, typer.Option("--batch", min=1, max=4096, help="Facts per embedding call")]


def reembed(batch: Batch = 64, as_json: JsonOption = False) -> None:
    """Re-embed every fact with the configured embedding model, then switch the store to it.

    The same model at another dimension is another embedder: every fact is re-embedded too.
    Resumable: an interrupted run keeps what it embedded, and the next run does only the rest.
    The store keeps its old vectors and model until the end, where one transaction switches
    both. Restart workers and servers with the new model configured afterwards."""
    settings = load_settings()

    async def go() -> ReembedResult:
        embedder = make_embedder(settings)
        columns = (TextColumn("re-embedding"), BarColumn(), MofNCompleteColumn(),
                   TimeRemainingColumn())  # fmt: skip
        try:
            async with store_of(settings) as store:
                bar_out = Console(stderr=True)
                with Progress(*columns, console=bar_out, transient=True, disable=as_json) as bar:
                    task = bar.add_task("re-embedding", total=None)

                    def show(done: int, total: int) -> None:
                        bar.update(task, completed=done, total=total)

                    return await reembed_facts(store, embedder, batch_size=batch, on_progress=show)
        finally:
            await embedder.close()

    result = run(go(), settings)

    def text() -> str:
        if not result.switched:
            what = "no fact" if result.total == 0 else f"all {result.total} facts"
            return f"nothing to re-embed: {what} already in {result.model}/{result.dimension}"
        before = "nothing" if result.previous is None else "/".join(map(str, result.previous))
        return (
            f"switched {result.total} facts from {before} to {result.model}/{result.dimension} "
            f"({result.embedded} embedded by this run, {result.total - result.embedded} earlier)"
        )

    emit(result, as_json=as_json, text=text)
