"""`mnemos import eden|mem0|file`: bring memories in (issue 15; README "Your data"; taking them out
and erasing a person: cli/export_forget.py). Imports are idempotent and resumable (run again:
what is there is skipped) and start with --dry-run; the source is only read."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import typer
from rich.console import Console
from rich.progress import Progress

from cli.common import JsonOption, check_id, emit, fail, load_settings, run
from memory.deps import Deps, open_deps
from memory.errors import InvalidInputError, MnemosError, NotFoundError
from memory.lifecycle.checks import check_batch
from memory.lifecycle.dry_run import Judge, combined
from memory.lifecycle.import_file import PLAN_ORDER, FileIndex, batches, open_export, scan
from memory.lifecycle.mem0 import load_items, map_mem0
from memory.lifecycle.plan import ImportPlan, plan, render
from memory.lifecycle.records import ImportBatch
from memory.lifecycle.writer import ImportReport, write_batches
from memory.settings import Settings
from memory.store import SchemaMismatchError, open_store
from memory.store.counts import ImportCounts, SessionPeople
from memory.store.rules.import_erasures import Known

import_app = typer.Typer(
    help="Import memories: from Eden's MongoDB, a mem0 dump, or a `mnemos export` file.",
    no_args_is_help=True,
)

DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print what would be imported and dropped; write nothing.")
]


def _now() -> datetime:
    return datetime.now(UTC)


def _report_text(report: ImportReport) -> str:
    lines = []
    for what, c in report.counts.items():
        extra = "".join(
            f", {n} {label}"
            for n, label in (
                (c.existing, "already there"), (c.duplicate, "duplicate"),
                (c.conflict, "conflict"), (c.forgotten, "forgotten user"),
            )
            if n
        )  # fmt: skip
        lines.append(f"{what}: {c.inserted} imported{extra}")
    outcomes: dict[str, int] = {}
    for outcome in report.blobs.values():
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    if outcomes:
        lines.append("consolidated: " + ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())))
    if report.merged:
        lines.append(f"agent shards merged by consolidation: {', '.join(report.merged)}")
    lines.append(f"facts embedded with the store's model: {report.embedded}")
    raised = report.counts.get("erasures", ImportCounts()).inserted
    if raised:  # the order files are imported in matters here, and only here (h226 D2)
        lines.append(
            f"{raised} forget(s) in the file are new to this store: they refuse what a later "
            "import brings of their users, and delete nothing already here (what an older file "
            "imported before this one brought of them stays: import into an empty store, "
            "newest file first)"
        )
    return "\n".join(lines)


async def _write_all(
    settings: Settings,
    batches: AsyncIterator[ImportBatch] | Iterable[ImportBatch],
    *,
    people: Sequence[SessionPeople] | None = None,
    facts: bool = False,
    known: Known | None = None,
) -> ImportReport:
    """The batches written one after the other. A file read in batches (import_file) gives
    ``people``, its sessions' (writer.session_people of the whole file), and ``facts``, whether
    it holds any: the embedder is checked against the store before the first batch, as for one
    batch, and not at the facts', after the agents and messages are written."""
    deps: Deps = await open_deps(settings)
    console = Console(stderr=True)
    try:
        with Progress(console=console, transient=not console.is_terminal) as bar:
            task = bar.add_task("importing", total=None)

            def begun(batch: ImportBatch) -> None:
                bar.update(task, total=(bar.tasks[0].total or 0) + batch.size)

            return await write_batches(
                deps, batches, now=_now, progress=lambda _, n: bar.advance(task, n),
                begun=begun, people=people, facts=facts, known=known,
            )  # fmt: skip
    finally:
        await deps.close()


async def _store_model(settings: Settings) -> str:
    from memory.embedding import make_embedder

    embedder = make_embedder(settings)
    try:
        return embedder.model
    finally:
        await embedder.close()


async def _against_store(
    settings: Settings,
    batches: Iterable[ImportBatch],
    known: Known | None = None,
    people: Sequence[SessionPeople] | None = None,
) -> tuple[ImportPlan, bool, str | None]:
    """The plan of the batches as the import would take them into the store (what is there, a
    forgotten user's: dropped), whether there is a store, and why it was not read (else None).
    The batches are judged one at a time, in the order the import writes them (dry_run.Judge),
    so that a file read in batches is never held whole; such a file gives the tombstones and
    session people of the whole (``known``, ``people``), as it gives them to the import. A
    SQLite file that does not exist is an empty store, read as such and not created; the store
    is opened without setup: a dry run does not migrate a store an older fleet still uses, and
    a store at another schema is not read (the file's plan alone)."""
    try:
        store = await open_store(settings, setup=False)
    except NotFoundError:
        return plan(batches), False, None
    except SchemaMismatchError as err:
        upgrade = (
            "`mnemos setup` upgrades it" if err.stored < err.reads else "a newer mnemos reads it"
        )
        note = (
            f"the store is at schema {err.stored}, this CLI reads {err.reads}: "
            f"the dry run checks the file only; {upgrade}"
        )
        return plan(batches), True, note
    try:
        judge = Judge(store, known, people)
        return combined([plan([await judge(batch)]) for batch in batches]), True, None
    finally:
        await store.close()


def _dry_run(settings: Settings, batches: list[ImportBatch], as_json: bool) -> None:
    # What the import would refuse is what the dry run says first: nothing would be written.
    try:
        for batch in batches:
            check_batch(batch, now=_now())
    except InvalidInputError as err:
        fail(str(err))
    _print_plan(settings, batches, as_json)


def _print_plan(
    settings: Settings,
    batches: Iterable[ImportBatch],
    as_json: bool,
    known: Known | None = None,
    people: Sequence[SessionPeople] | None = None,
) -> None:
    """The dry run's report of batches the input rules have passed."""
    p, exists, unread = run(_against_store(settings, batches, known, people), settings)
    model = run(_store_model(settings), settings)
    path = settings.store.sqlite_path
    empty = "" if exists else f"no store at {path} yet (the import creates it): nothing there\n"
    said = empty + (f"{unread}\n" if unread else "")
    emit(
        {**p.model_dump(), "store_exists": exists, "store_not_read": unread},
        as_json=as_json,
        text=lambda: said + render(p, store_model=model),
    )


def _finish(settings: Settings, batches: list[ImportBatch], dry_run: bool, as_json: bool) -> None:
    if dry_run:
        _dry_run(settings, batches, as_json)
        return
    report = run(_write_all(settings, batches), settings)
    emit(report.__dict__, as_json=as_json, text=lambda: _report_text(report))


@import_app.command("eden")
def import_eden(
    mongodb_uri: Annotated[
        str,
        typer.Option(
            "--mongodb-uri",
            envvar="MNEMOS_EDEN_MONGODB_URI",
            help="Eden's MongoDB (only read). With a password in the URI, set "
            "MNEMOS_EDEN_MONGODB_URI instead: it stays out of `ps` and the shell history.",
        ),
    ],
    db: Annotated[str, typer.Option(help="Eden's database name.")],
    agent: Annotated[str | None, typer.Option(help="Only this Eden agent id.")] = None,
    dry_run: DryRun = False,
    as_json: JsonOption = False,
) -> None:
    """Eden's v1 and memory2 collections, whichever exist, one agent at a time."""
    from pymongo import AsyncMongoClient
    from pymongo.errors import PyMongoError

    from memory.lifecycle.eden_reader import read_eden

    settings = load_settings()

    async def stream() -> AsyncIterator[ImportBatch]:
        try:
            client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_uri)
        except PyMongoError as e:  # a URI that does not parse
            raise MnemosError(f"Eden's MongoDB: {e}") from None
        try:
            async for batch in read_eden(
                client[db], settings.reflections, now=_now(), embeddings=not dry_run,
                only_agent=agent,
            ):  # fmt: skip
                yield batch
        except PyMongoError as e:
            # Not the store's: the source's (unreachable, refused), said as one line.
            raise MnemosError(f"Eden's MongoDB: {str(e).split(', Timeout:')[0]}") from None
        finally:
            await client.close()

    async def collect() -> list[ImportBatch]:
        return [b async for b in stream()]

    if dry_run:
        _finish(settings, run(collect(), settings), dry_run, as_json)
        return
    # One agent read, written, then the next: memory stays at one agent's records, and an
    # interrupted import has written whole agents before the one it stopped in.
    report = run(_write_all(settings, stream()), settings)
    emit(report.__dict__, as_json=as_json, text=lambda: _report_text(report))


@import_app.command("mem0")
def import_mem0(
    file: Annotated[Path, typer.Argument(help="mem0 get_all/export JSON (or JSON Lines).")],
    agent: Annotated[
        str | None, typer.Option(help="Agent for memories that name none (else dropped).")
    ] = None,
    dry_run: DryRun = False,
    as_json: JsonOption = False,
) -> None:
    """mem0 memories: user memories become user facts, the others agent facts."""
    settings = load_settings()
    if agent is not None:
        check_id("agent", agent)
    try:
        # utf-8-sig: a dump saved by an editor that writes a BOM (Notepad, PowerShell) reads.
        items = load_items(file.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError) as err:
        fail(f"cannot read {file}: {err}")
    _finish(settings, [map_mem0(items, default_agent=agent, now=_now())], dry_run, as_json)


@import_app.command("file")
def import_file(
    file: Annotated[Path, typer.Argument(help="A `mnemos export` file (JSON Lines).")],
    dry_run: DryRun = False,
    as_json: JsonOption = False,
) -> None:
    """An export of this or another mnemos: same ids, so importing twice writes nothing new.
    Read a batch at a time (memory.lifecycle.import_file), after a first pass that checks the
    whole file: a truncated or bad one is refused with nothing written."""
    settings = load_settings()
    try:
        with open_export(file) as f:
            index = _scanned(file, f)
            if dry_run:
                plan_order = batches(f, index, order=PLAN_ORDER)
                _print_plan(settings, plan_order, as_json, index.known, index.people)
                return
            written = _write_all(
                settings, batches(f, index), people=index.people, facts=bool(index.facts),
                known=index.known,
            )  # fmt: skip
            report = run(written, settings)
    except OSError as err:
        fail(f"cannot read {file}: {err.strerror or err}")
    emit(report.__dict__, as_json=as_json, text=lambda: _report_text(report))


def _scanned(file: Path, f: BinaryIO) -> FileIndex:
    """The file's first pass (import_file.scan), its refusal one line."""
    try:
        return scan(f, now=_now())
    except InvalidInputError as err:  # a bad line (ExportFormatError) or a bad record
        fail(str(err))
    except UnicodeDecodeError:
        fail(f"cannot read {file}: not UTF-8 text (a `mnemos export` file is)")
