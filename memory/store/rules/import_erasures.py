"""import_erasures, planned: the erasure tombstones of an export file merged into the store, so
that a store moved by export and import keeps who was forgotten (rules.erasure): an older file
of a forgotten user (a backup, a resumable Eden or mem0 import) imports nothing of them in the
new store either.

A file's records are judged against the tombstones the store holds that the file does not
know of (``unknown``): a file carrying a tombstone at an epoch and a time at least the stored
one's was written after that forget, and what it holds of the user was kept or said since; a file
without it (a backup from before, a file of another source) imports nothing of them. The time,
because epochs are counters each store keeps: a store forked from this one before its forget
counts its own forget of the user from the same epoch, and if that forget came earlier, its file
holds what the user said between the two, before they asked this store to forget them.
The order in which a store's files are imported does not matter (one agent's file carrying an
every-agent tombstone before another agent's file of the user who came back), nor importing a
newer export of the same store over an older one.

A row is merged with the stored one by its epoch and its time, each the higher of the two, and
written only where that moves it: importing a file twice, or an older file after a newer one,
changes nothing; a formation that loaded its window before a raised epoch writes nothing, as
after a forget; and a merged tombstone is known only to files that know both forgets.
The writer imports the tombstones after every other record of the file (writer.write_batch):
the file's records of a user who came back after the forget are what the source store holds of
them now, formed after it, and are imported as they were there; only what a later import
brings of the user is judged against the tombstones. A tombstone never deletes: what the store
already held of the user stays (a forget there erases it)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.store.counts import Erasure, ImportCounts
from memory.store.rules.lifecycle_writes import PutErasure
from memory.store.rules.writes import Plan, Request, user_key

ErasureKey = tuple[str, str]  # (agent key, user)
Mark = tuple[int, datetime]  # a tombstone's epoch and when its last forget was
# The tombstones a file carries, (agent key, user, epoch, when): what it knows was forgotten.
Known = tuple[tuple[str, str, int, datetime], ...]


def _merged(rows: Iterable[Erasure]) -> dict[ErasureKey, Erasure]:
    """Each key's rows in one: the highest epoch (epochs only rise) and the latest time (it knows
    every forget either store made), with the counts of the latest forget."""
    latest: dict[ErasureKey, Erasure] = {}
    for row in rows:
        key = (row.agent_key, row.user_id)
        was = latest.get(key, row)
        newest = row if row.forgotten_at >= was.forgotten_at else was
        latest[key] = newest.model_copy(update={"epoch": max(row.epoch, was.epoch)})
    return latest


def known_of(rows: Iterable[Erasure]) -> Known:
    """A file's tombstones as the import calls take them, merged as the import merges them."""
    return tuple((*key, r.epoch, r.forgotten_at) for key, r in sorted(_merged(rows).items()))


def epochs_of(stored: Mapping[ErasureKey, Mark]) -> dict[ErasureKey, int]:
    return {key: epoch for key, (epoch, _) in stored.items()}


def unknown(stored: Mapping[ErasureKey, Mark], known: Known) -> dict[ErasureKey, int]:
    """The epochs of the stored tombstones a file does not know of: those it carries at a lower
    epoch or an earlier time (another store's forget, whose epoch counts from the same start),
    or not at all. Only these refuse its records (an empty ``known``: every stored one)."""
    file = {(key, user): (epoch, at) for key, user, epoch, at in known}
    return {
        k: epoch
        for k, (epoch, at) in stored.items()
        if k not in file or file[k][0] < epoch or file[k][1] < at
    }


@dataclass(frozen=True)
class ErasuresRequest(Request[dict[ErasureKey, Mark]]):
    """The stored marks of these tombstones' rows (some agent-key and user pairs beyond them)."""

    agent_keys: tuple[str, ...]
    user_ids: tuple[str, ...]

    def serialized_on(self) -> tuple[str, ...]:
        # As a forget: a commit that checked one of these users' epochs meets the merge.
        return tuple(user_key(u) for u in self.user_ids)


def erasures_request(rows: Sequence[Erasure]) -> ErasuresRequest:
    return ErasuresRequest(
        tuple(dict.fromkeys(r.agent_key for r in rows)),
        tuple(dict.fromkeys(r.user_id for r in rows)),
    )


def plan_import_erasures(
    rows: Sequence[Erasure], marks: Mapping[ErasureKey, Mark]
) -> Plan[ImportCounts]:
    """Each key's tombstone merged (``_merged``) with the stored one, written where that moves
    it: a formation that loaded its window before a raised epoch meets it, and a file of a store
    that forgot the user earlier stays unknown (``unknown``)."""
    writes = []
    for key, r in _merged(rows).items():
        stored = marks.get(key)
        merged = (r.epoch, r.forgotten_at) if stored is None else _later(stored, r)
        if merged != stored:
            writes.append(PutErasure(*key, *merged, json.dumps(r.counts)))
    return Plan(tuple(writes), ImportCounts(inserted=len(writes), existing=len(rows) - len(writes)))


def _later(stored: Mark, row: Erasure) -> Mark:
    return max(stored[0], row.epoch), max(stored[1], row.forgotten_at)
