"""The part of the store contract that operators' tools use to look after memory rather than form
it: re-embedding (``mnemos reembed``), listing and correcting facts and reflections (the
management API, the memory page) and the windows formed degraded (``mnemos degraded``).
``MemoryStore`` (memory/store/base.py) extends it. A listing's rules are written here once: a
page of no rows (limit <= 0) is empty without asking the database, and each backend answers the
rest with the abstract ``_`` query of the listing."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from memory.degraded import DegradedWindow
from memory.models import Fact, FactFilter, Reflection, ScopeKey
from memory.store.base_lifecycle import Vector

# Which reflections a listing reads: the buffer alone is the context's and the consolidation's
# (a partial index of its own on SQLite); those in no blob add the set-aside ones; "set_aside"
# reads those alone (few: each takes a refusal), however many newer ones are buffered.
type Which = Literal["buffered", "in_no_blob", "set_aside", "all"]


# A fact's place in a listing: (updated_at, fact_id), the order list_facts sorts by.
FactKey = tuple[datetime, str]


def fact_key(fact: Fact) -> FactKey:
    return fact.updated_at, fact.fact_id


@dataclass(frozen=True)
class Keyset:
    """Which side of a key a page lies on: ``after`` it (older, read descending) or ``before``
    it (newer: the nearest ones, read ascending and returned descending)."""

    after: FactKey | None
    before: FactKey | None

    @property
    def key(self) -> FactKey:
        key = self.after or self.before
        assert key is not None
        return key

    @property
    def newer(self) -> bool:
        return self.after is None


@dataclass(frozen=True)
class ReembedItem:
    """A fact to re-embed: its id, its content and that content's hash (what the vector is for)."""

    fact_id: str
    content: str
    hash: str


def current_side_vectors(
    vectors: Sequence[tuple[ReembedItem, Vector]], stored: Mapping[str, str]
) -> list[tuple[ReembedItem, Vector]]:
    """The side vectors put_reembedded writes: those of facts that still exist with the content
    their vector was made from (``stored``: the stored content hash of each fact still there,
    read in the writing transaction). A batch read by reembed_pending is written later: a fact
    forgotten since would have its erased text's vector back, with no fact behind it for a later
    forget to find; one edited since, a vector of text it no longer holds (pending again)."""
    return [(item, v) for item, v in vectors if stored.get(item.fact_id) == item.hash]


# A re-embed's target is an embedder: its model AT its dimension. The same model at another
# dimension (MNEMOS_EMBEDDING__GEMINI_DIMENSION 768 -> 1536) makes other vectors, so every fact
# is re-embedded, and side vectors made at one dimension never count for another.


def side_tag(model: str, dimension: int) -> str:
    """The tag of the side vectors (fact_reembed.model) of ``model`` at ``dimension``."""
    return f"{model}@{int(dimension)}"


@dataclass(frozen=True)
class ReembedTarget:
    """What a re-embed into an embedder asks of a backend: the facts pending are those with no
    side vector tagged ``tag`` for their content, but those of ``kept_model``."""

    tag: str
    kept_model: str  # its facts already hold the embedder's vectors; "" (no model's) for none


def reembed_target(model: str, dimension: int, meta: tuple[str, int] | None) -> ReembedTarget:
    """The target of a re-embed into (model, dimension) of a store whose vectors are ``meta``'s
    (every stored vector has its dimension): a fact of ``model`` keeps its vector only when that
    dimension is ``dimension`` too."""
    same_dimension = meta is not None and meta[1] == dimension
    return ReembedTarget(side_tag(model, dimension), model if same_dimension else "")


class ManageContract(abc.ABC):
    # ------------------------------------------------------------ re-embedding (mnemos reembed)
    # A re-embed writes each fact's new vector to a side record (keyed by fact, tagged with the
    # embedder, side_tag(model, dimension), and the content hash it was made from); the facts
    # keep serving their old vectors until switch_embedding swaps every vector and the embedding
    # meta in one transaction. An embedder is its model and its dimension (reembed_target).

    @abc.abstractmethod
    async def embedding_meta(self, *, fresh: bool = False) -> tuple[str, int] | None:
        """MemoryStore.embedding_meta."""

    async def reembed_pending(self, model: str, dimension: int, *, limit: int) -> list[ReembedItem]:
        """Facts (valid or not) with no side vector of (model, dimension) for their current
        content, but those whose vector already is that embedder's."""
        if limit <= 0:
            return []
        meta = await self.embedding_meta(fresh=True)
        return await self._reembed_pending(reembed_target(model, dimension, meta), limit)

    @abc.abstractmethod
    async def _reembed_pending(self, target: ReembedTarget, limit: int) -> list[ReembedItem]:
        """At most ``limit`` (> 0) of ``target``'s pending facts, in any order: a re-embed stores
        their side vectors, and asks again until none is left."""

    @abc.abstractmethod
    async def count_reembed_pending(self, model: str, dimension: int) -> tuple[int, int]:
        """(pending facts, all facts) for a re-embed into (model, dimension), as the switch
        counts them."""

    @abc.abstractmethod
    async def put_reembedded(
        self, model: str, dimension: int, vectors: Sequence[tuple[ReembedItem, Vector]]
    ) -> None:
        """Store side vectors of (model, dimension) (upsert), each for the content hash of its
        item, in one transaction with the facts' check: only those current_side_vectors keeps."""

    @abc.abstractmethod
    async def switch_embedding(self, model: str, dimension: int) -> int:
        """In one transaction: every pending fact takes its side vector of (model, dimension) and
        ``model``, the embedding meta becomes (model, dimension), the side records go. Returns
        the facts switched. Raises ConflictError (nothing changed) while a fact is pending."""

    # ------------------------------------------------------------ management (operators, backend UIs)

    async def list_facts(
        self,
        flt: FactFilter,
        *,
        include_invalid: bool = False,
        offset: int = 0,
        limit: int = 50,
        after: FactKey | None = None,
        before: FactKey | None = None,
    ) -> list[Fact]:
        """Facts within ``flt``, newest first: by updated_at, then fact_id (both descending),
        paged. Invalidated ones only on request. ``after`` a fact's key (``fact_key``): only those
        listed after it; ``before`` one: the nearest listed before it (still newest first). A
        page read by its last fact's key skips nothing and repeats nothing when facts are
        deleted or formed meanwhile, as an offset would (an edited one moves to the front)."""
        if limit <= 0:
            return []
        keyset = None if after is None and before is None else Keyset(after, before)
        listed = await self._list_facts(
            flt, valid_only=not include_invalid, offset=max(offset, 0), limit=limit, keyset=keyset
        )
        return listed[::-1] if keyset is not None and keyset.newer else listed

    @abc.abstractmethod
    async def _list_facts(
        self, flt: FactFilter, *, valid_only: bool, offset: int, limit: int, keyset: Keyset | None
    ) -> list[Fact]:
        """list_facts with offset >= 0 and limit > 0, those the keyset admits (Keyset), ordered
        (updated_at, fact_id) descending; ascending, the nearest first, for a newer page."""

    @abc.abstractmethod
    async def count_facts(self, flt: FactFilter) -> int:
        """Valid facts within ``flt``."""

    @abc.abstractmethod
    async def edit_fact(
        self,
        fact_id: str,
        *,
        content: str,
        embedding: Vector,
        embedding_model: str,
        at: datetime,
        reason: str = "manual edit",
        expected_version: int | None = None,
    ) -> Fact:
        """A person's correction: version + 1, previous content kept in history, new vector, scope
        version bumped. NotFoundError for an unknown id, ConflictError for an invalidated fact, a
        content that duplicates another valid fact of the same agent/user/scope, or a fact no
        longer at ``expected_version`` (the version edited; None: whichever is stored)."""

    @abc.abstractmethod
    async def invalidate_fact(
        self, fact_id: str, *, at: datetime, reason: str = "manual delete"
    ) -> Fact:
        """A person's delete: the fact is kept, marked invalid (history entry), never shown again.
        Idempotent for an already invalid fact; NotFoundError for an unknown id."""

    @abc.abstractmethod
    async def get_reflection(self, reflection_id: str) -> Reflection | None: ...

    async def list_reflections(
        self, key: ScopeKey, *, include_absorbed: bool = False, limit: int = 100
    ) -> list[Reflection]:
        """Reflections of a scope key, newest first."""
        if limit <= 0:
            return []
        # Not absorbed: the buffer and the set-aside ones a person may still correct.
        which: Which = "all" if include_absorbed else "in_no_blob"
        return await self._reflections(key, which=which, newest_first=True, limit=limit)

    async def list_set_aside_reflections(self, key: ScopeKey, *, limit: int) -> list[Reflection]:
        """The key's set-aside reflections alone (absorbed_into_version SET_ASIDE), newest first:
        a person's to correct or remove, however many newer ones were buffered after them."""
        if limit <= 0:
            return []
        return await self._reflections(key, which="set_aside", newest_first=True, limit=limit)

    @abc.abstractmethod
    async def _reflections(
        self, key: ScopeKey, *, which: Which, newest_first: bool, limit: int | None
    ) -> list[Reflection]:
        """The key's reflections (``which``: the buffered ones, absorbed_into_version None; those
        in no blob, the buffered and the set-aside ones, SET_ASIDE; the set-aside ones alone; or
        all) ordered by formed_at, then by insertion (the later stored last), in that direction;
        at most ``limit`` (> 0) of them, all of them for None. list_reflections',
        list_set_aside_reflections' and MemoryStore.unabsorbed_reflections' query."""

    @abc.abstractmethod
    async def edit_reflection(
        self, reflection_id: str, *, content: str, expected_content: str | None = None
    ) -> Reflection:
        """Correct a buffered reflection, or a set-aside one (back in the buffer). ConflictError
        once absorbed (edit the blob instead), or when its text is no longer
        ``expected_content``, the one edited (None: whichever is stored)."""

    @abc.abstractmethod
    async def delete_reflection(self, reflection_id: str) -> None:
        """Remove a buffered or set-aside reflection. ConflictError once absorbed; NotFoundError
        when unknown."""

    # ------------------------------------------------------------ degraded windows (mnemos degraded)
    # The lasting record of the windows formed degraded (memory/degraded.py): a run's memo keeps
    # only its newest windows, is written at its end, and goes with the namespace's retention.
    # commit_formation records them (FormationCommit.degraded); these read and mark them.

    async def list_degraded(
        self,
        *,
        agent_id: str | None = None,
        session_id: str | None = None,
        include_reformed: bool = False,
        limit: int = 100,
    ) -> list[DegradedWindow]:
        """The records (of the agent, of the session, when given), newest degraded_at first, then
        by agent, session, after_seq descending and step; re-formed ones only on request; at
        most ``limit``."""
        if limit <= 0:
            return []
        return await self._list_degraded(agent_id, session_id, include_reformed, limit)

    @abc.abstractmethod
    async def _list_degraded(
        self, agent_id: str | None, session_id: str | None, include_reformed: bool, limit: int
    ) -> list[DegradedWindow]:
        """list_degraded with limit > 0, in its order."""

    @abc.abstractmethod
    async def mark_reformed(
        self,
        agent_id: str,
        session_id: str,
        after_seq: int,
        upto_seq: int,
        *,
        steps: Sequence[str],
        at: datetime,
    ) -> int:
        """reformed_at = at for the records of these steps within the range (their after_seq >=
        after_seq and upto_seq <= upto_seq) not re-formed yet (an earlier date stays); returns
        how many."""
