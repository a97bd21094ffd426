"""What of an import is already there: the one rule the writer and the dry run both use."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, Self


class Placeable(Protocol):
    """A fact or reflection import, as ``place`` sorts them."""

    @property
    def ids(self) -> tuple[str, ...]: ...

    @property
    def owner(self) -> Hashable: ...

    def under(self, record_id: str) -> Self: ...


@dataclass(frozen=True)
class Placed[R: Placeable]:
    new: list[R] = field(default_factory=list)  # each under the id it is written with
    there: list[R] = field(default_factory=list)  # a re-run: stored already
    taken: list[R] = field(default_factory=list)  # every id it may take is another's: conflict


def place[R: Placeable](records: Sequence[R], stored: Mapping[str, Hashable]) -> Placed[R]:
    """The one rule for what of an import is already there. ``stored``: the owner (a fact's
    (agent, user), a reflection's scope key) of each stored record among the records' ids. A
    record stored under one of its ids for its own owner is there (a re-run; under its other id,
    one of an earlier version); one stored only for other owners is not (the same source
    imported for another agent or user), and is written under the first of its ids that is
    free; taken when none is (nothing written). An id given to one of the records is held
    for the next ones, as the store would hold it."""
    held = dict(stored)
    placed: Placed[R] = Placed()
    for record in records:
        if any(held.get(i, _NONE) == record.owner for i in record.ids):
            placed.there.append(record)
        elif (free := next((i for i in record.ids if i not in held), None)) is not None:
            held[free] = record.owner
            placed.new.append(record.under(free))
        else:
            placed.taken.append(record)
    return placed


_NONE = object()  # no stored record: equal to no owner
