"""What a backend UI or an operator CLI calls to look at and correct an agent's memory (004
"Managing User Memory", "Managing Collective Memory").

manager = MemoryManager(store, embedder, settings)
page = await manager.list_facts(FactFilter(agent_id="eve", user_id="alice"))
await manager.edit_fact(fact_id, "Prefers green tea", within=FactFilter(...),
                       expected_version=shown.version)
await manager.edit_consolidated(key, text, expected_version=shown.version)

Every write goes through one atomic store call; ``within`` (facts) and the scope key
(reflections, blobs) keep a UI serving one user to that user's memory: ids outside it are
reported as unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from client.fact_pages import FactPage, fact_page, read_cursor
from memory.context import one_line as as_one_line
from memory.embedding.base import Embedder
from memory.errors import ConflictError, InvalidInputError, NotFoundError
from memory.input_rules import require_storable
from memory.lookup import require_agent
from memory.models import ConsolidatedMemory, Fact, FactFilter, Reflection, ScopeKey
from memory.pipeline.consolidation import VERSION_LINE
from memory.pipeline.usage import words
from memory.settings import Scope, Settings
from memory.settings_errors import validation_line
from memory.store.base import MemoryStore
from memory.store.counts import ForgetCounts
from memory.store.rules.manage import check_edited_version

MAX_PAGE = 500
# The longest text a person may give a fact, a reflection or a consolidated memory, in characters:
# words alone do not bound it (one pasted token, URL or base64 blob is one word). Held here, where
# every door's edit passes (the API, whose schema states it too, the memory page, a backend's own
# UI), so that none stores more than another.
MAX_EDIT_CHARS = 20_000
# Far past any agent's facts, and far below the 64-bit integers every store's OFFSET takes.
MAX_OFFSET = 1_000_000_000


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ScopeStats(_Out):
    scope_key: ScopeKey
    blob_version: int  # 0 = no consolidated memory yet
    blob_words: int
    blob_updated_at: datetime | None
    blob_edited_by: Literal["consolidation", "manual"] | None
    buffered_reflections: int
    valid_facts: int | None  # None for the session scope: facts are agent or user scoped


class MemoryStats(_Out):
    agent_id: str
    user_id: str | None
    session_id: str | None
    scopes: list[ScopeStats]


class ScopeConsolidationStatus(_Out):
    scope_key: ScopeKey
    blob_version: int
    buffered: int
    threshold: int
    due: bool  # the buffer reached the threshold: the next formation consolidates it


def _body(content: str) -> str:
    """A blob's text without its ``VERSION: n`` line."""
    lines = content.strip().splitlines()
    return "\n".join(lines[1:] if lines and VERSION_LINE.match(lines[0]) else lines)


def _checked(content: str, what: str, limit: int, *, one_line: bool = True) -> str:
    """A person's text, trimmed: non-empty, within ``MAX_EDIT_CHARS`` characters and ``limit``
    words, else a clear error. A fact or a reflection is one item: its whitespace (newlines too)
    is normalised to single spaces, so it cannot pose as several items wherever it is shown (a
    blob keeps its lines). The characters counted are those stored, so that the text the API's
    schema admits (at most as long before trimming) is never refused here."""
    require_storable(content, what)
    text = as_one_line(content) if one_line else content.strip()
    if not text:
        raise InvalidInputError(f"{what} cannot be empty")
    if len(text) > MAX_EDIT_CHARS:
        raise InvalidInputError(
            f"{what} has at most {MAX_EDIT_CHARS:,} characters; this one has {len(text):,}"
        )
    if words(text) > limit:
        raise InvalidInputError(f"{what} has at most {limit} words; this one has {words(text)}")
    return text


def _check_version(expected_version: int | None) -> None:
    if expected_version is not None and expected_version < 0:
        raise InvalidInputError(f"expected_version {expected_version}: a version is 0 or more")


def _now() -> datetime:
    return datetime.now(UTC)


def _within(fact: Fact, flt: FactFilter) -> bool:
    if fact.agent_id != flt.agent_id:
        return False
    if fact.scope == "agent":
        return flt.include_agent_scope
    return flt.user_id is not None and fact.user_id == flt.user_id


class MemoryManager:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        settings: Settings,
        *,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self._clock = clock

    # ------------------------------------------------------------ facts

    async def list_facts(
        self,
        flt: FactFilter,
        *,
        include_invalid: bool = False,
        offset: int = 0,
        limit: int = 50,
        cursor: str | None = None,
    ) -> FactPage:
        """Newest (last changed) first; deleted facts only on request. ``cursor``: a page's
        ``next_cursor`` (the older facts after it) or ``prev_cursor`` (the newer ones before it),
        which skip nothing and repeat nothing while facts are deleted or formed (one edited
        meanwhile moves to the front: it changed last); an offset counts rows, which shift
        under it."""
        if not 1 <= limit <= MAX_PAGE or not 0 <= offset <= MAX_OFFSET:
            raise InvalidInputError(f"page: 1 ≤ limit ≤ {MAX_PAGE} and 0 ≤ offset ≤ {MAX_OFFSET:,}")
        keyset = None if cursor is None else read_cursor(cursor)
        if keyset is not None and offset:
            raise InvalidInputError("page: a cursor or an offset, not both")
        await self._require_agent(flt.agent_id)
        # One more than asked tells whether there is a page beyond, on the side read.
        facts = await self.store.list_facts(
            flt,
            include_invalid=include_invalid,
            offset=offset,
            limit=limit + 1,
            after=None if keyset is None else keyset.after,
            before=None if keyset is None else keyset.before,
        )
        return fact_page(
            facts, keyset, offset=offset, limit=limit, valid_total=await self.store.count_facts(flt)
        )

    async def show_fact(self, fact_id: str, *, within: FactFilter | None = None) -> Fact:
        found = await self.store.get_facts([fact_id])
        if not found or (within is not None and not _within(found[0], within)):
            raise NotFoundError(f"no fact {fact_id!r}")
        return found[0]

    async def edit_fact(
        self,
        fact_id: str,
        content: str,
        *,
        within: FactFilter | None = None,
        reason: str = "manual edit",
        expected_version: int | None = None,
    ) -> Fact:
        """A correction: a new version with the new text and its vector. Saving the same text again
        changes nothing. ConflictError for a deleted fact or a text another fact already holds.

        ``expected_version`` is the version the person edited (None: the current one); when
        another edit or a formation stored a newer one meanwhile, ConflictError and nothing is
        written, so that neither overwrites the other unseen (as edit_consolidated)."""
        _check_version(expected_version)
        text = _checked(content, "a fact", self.settings.facts.max_words * 2)
        require_storable(reason, "the reason")
        fact = await self.show_fact(fact_id, within=within)
        if fact.invalidated_at is not None:
            raise ConflictError(f"fact {fact_id!r} was deleted: it can no longer be edited")
        check_edited_version(fact, expected_version)
        if text == fact.content:
            return fact
        batch = await self.embedder.embed([text])
        # Checked again in the write's transaction: a formation may update it while embedding.
        return await self.store.edit_fact(
            fact_id,
            content=text,
            embedding=batch.vectors[0],
            embedding_model=batch.model,
            at=self._clock(),
            reason=reason,
            expected_version=expected_version,
        )

    async def delete_fact(
        self, fact_id: str, *, within: FactFilter | None = None, reason: str = "manual delete"
    ) -> Fact:
        """The fact is kept, marked deleted, and never shown to the agent again."""
        await self.show_fact(fact_id, within=within)
        return await self.store.invalidate_fact(fact_id, at=self._clock(), reason=reason)

    # ------------------------------------------------------------ reflections

    async def list_reflections(
        self, key: ScopeKey, *, include_absorbed: bool = False, limit: int = 100
    ) -> list[Reflection]:
        """Newest first: the buffered ones are what "Recent Memory Context" shows; the set-aside
        ones (absorbed_into_version 0: no consolidation could take them) are listed too, for a
        person to correct (which puts them back in the buffer) or remove."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInputError(f"1 ≤ limit ≤ {MAX_PAGE}")
        await self._require_agent(key.agent_id)
        return await self.store.list_reflections(
            key, include_absorbed=include_absorbed, limit=limit
        )

    async def list_set_aside_reflections(
        self, key: ScopeKey, *, limit: int = MAX_PAGE
    ) -> list[Reflection]:
        """The set-aside reflections alone, newest first: however many newer ones were buffered
        after one, it stays reachable for a person to correct (back in the buffer) or remove."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInputError(f"1 ≤ limit ≤ {MAX_PAGE}")
        await self._require_agent(key.agent_id)
        return await self.store.list_set_aside_reflections(key, limit=limit)

    async def edit_reflection(
        self,
        key: ScopeKey,
        reflection_id: str,
        content: str,
        *,
        expected_content: str | None = None,
    ) -> Reflection:
        """Refine a buffered (or set-aside) reflection before it is consolidated. ConflictError
        once absorbed, or when its text is no longer ``expected_content``, the text the person
        edited (a reflection has no version; None: the current one), so that another person's
        correction is not overwritten unseen."""
        text = _checked(content, "a reflection", self.settings.reflections.max_words * 2)
        if expected_content is not None:
            require_storable(expected_content, "the text edited")
        await self._reflection_of(key, reflection_id)
        return await self.store.edit_reflection(
            reflection_id, content=text, expected_content=expected_content
        )

    async def delete_reflection(self, key: ScopeKey, reflection_id: str) -> None:
        """Drop a buffered reflection. ConflictError once absorbed."""
        await self._reflection_of(key, reflection_id)
        await self.store.delete_reflection(reflection_id)

    async def _reflection_of(self, key: ScopeKey, reflection_id: str) -> Reflection:
        found = await self.store.get_reflection(reflection_id)
        if found is None or found.scope_key != key:
            raise NotFoundError(f"no reflection {reflection_id!r} in {key.key}")
        return found

    # ------------------------------------------------------------ consolidated memory

    async def show_consolidated(self, key: ScopeKey) -> ConsolidatedMemory | None:
        """None until the first consolidation (or manual edit) of the scope; NotFoundError for an
        agent that is not registered (not an agent with no memory yet)."""
        await self._require_agent(key.agent_id)
        return await self.store.get_consolidated(key)

    async def edit_consolidated(
        self, key: ScopeKey, content: str, *, expected_version: int | None = None
    ) -> ConsolidatedMemory:
        """Replace the blob by a person's text (004: a manual edit replaces it completely).

        ``expected_version`` is the version the person edited (None: the current one); when a
        consolidation stored a newer one meanwhile, ConflictError and nothing is written, so that
        neither overwrites the other unseen. The text's ``VERSION: n`` line, if any, is replaced
        by the new version's, as consolidation writes it. The text saved as it stands changes
        nothing: the current blob is returned.
        """
        _check_version(expected_version)
        reflections = self.settings.reflections
        word_limit = reflections.word_limit(key.scope)
        allowed = int(word_limit * (1 + reflections.word_limit_tolerance))
        body = _checked(_body(content), f"the {key.scope} memory", allowed, one_line=False)
        await self._require_agent(key.agent_id)
        current = await self.store.get_consolidated(key)
        version = 0 if current is None else current.version
        if expected_version is not None and expected_version != version:
            raise ConflictError(
                f"{key.key} is at version {version}, not {expected_version}: reload and edit again"
            )
        if current is not None and _body(current.content) == body:
            return current  # saved as it was: no new version, no change of author
        return await self.store.commit_consolidation(
            key,
            expected_version=version,
            content=f"VERSION: {version + 1}\n{body}",
            word_limit=word_limit,
            absorbed_ids=[],
            at=self._clock(),
            edited_by="manual",
            # A person's edit is news to the blob: what was said before all it held is still
            # older than it.
            said_from=None if current is None else current.said_from,
        )

    # ------------------------------------------------------------ overview

    async def stats(
        self, agent_id: str, user_id: str | None = None, session_id: str | None = None
    ) -> MemoryStats:
        """Per scope (agent, then user and session when given): blob, buffer, valid facts."""
        keys = await self._keys(agent_id, user_id, session_id)
        scopes: list[ScopeStats] = []
        for key in keys:
            blob = await self.store.get_consolidated(key)
            facts: int | None = None
            if key.scope == "agent":
                facts = await self.store.count_facts(FactFilter(agent_id=agent_id))
            elif key.scope == "user":
                facts = await self.store.count_facts(
                    FactFilter(agent_id=agent_id, user_id=user_id, include_agent_scope=False)
                )
            scopes.append(
                ScopeStats(
                    scope_key=key,
                    blob_version=0 if blob is None else blob.version,
                    blob_words=0 if blob is None else words(blob.content),
                    blob_updated_at=None if blob is None else blob.updated_at,
                    blob_edited_by=None if blob is None else blob.edited_by,
                    buffered_reflections=await self.store.count_unabsorbed(key),
                    valid_facts=facts,
                )
            )
        return MemoryStats(agent_id=agent_id, user_id=user_id, session_id=session_id, scopes=scopes)

    async def consolidation_status(
        self, agent_id: str, user_id: str | None = None, session_id: str | None = None
    ) -> list[ScopeConsolidationStatus]:
        """Per scope: buffered reflections against the threshold that triggers consolidation."""
        cfg = self.settings.reflections
        statuses: list[ScopeConsolidationStatus] = []
        for key in await self._keys(agent_id, user_id, session_id):
            blob = await self.store.get_consolidated(key)
            buffered = await self.store.count_unabsorbed(key)
            statuses.append(
                ScopeConsolidationStatus(
                    scope_key=key,
                    blob_version=0 if blob is None else blob.version,
                    buffered=buffered,
                    threshold=cfg.threshold(key.scope),
                    due=buffered >= cfg.threshold(key.scope),
                )
            )
        return statuses

    async def _keys(
        self, agent_id: str, user_id: str | None, session_id: str | None
    ) -> list[ScopeKey]:
        wanted: list[tuple[Scope, str | None, str | None]] = [("agent", None, None)]
        if user_id is not None:
            wanted.append(("user", user_id, None))
        if session_id is not None:
            wanted.append(("session", None, session_id))
        try:
            keys = [
                ScopeKey(scope=scope, agent_id=agent_id, user_id=user, session_id=session)
                for scope, user, session in wanted
            ]
        except ValidationError as exc:  # a malformed id: one line, without pydantic's URL
            raise InvalidInputError(f"invalid id: {validation_line(exc)}") from exc
        await self._require_agent(agent_id)
        return keys

    async def _require_agent(self, agent_id: str) -> None:
        """A typo in an agent id must not look like an agent with an empty memory."""
        await require_agent(self.store, agent_id)

    # ------------------------------------------------------------ erasure (issue 15)

    async def forget_user(self, user_id: str, *, agent_id: str | None) -> list[ForgetCounts]:
        """Hard-delete everything of the user (of one agent, or of every agent with None):
        facts with their history, user memory, messages, cache entries; counts per agent. A
        formation running for the user meanwhile writes nothing of them. Agent-scope memory is
        not keyed by a user and stays."""
        if agent_id is not None:
            await self._require_agent(agent_id)
        return await self.store.forget_user(user_id, agent_id=agent_id, at=_now())
