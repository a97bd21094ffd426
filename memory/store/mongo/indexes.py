"""Index definitions of the MongoDB store: the regular indexes and the Atlas Search indexes.

Regular indexes are created by ``MongoStore.setup()``. Atlas Search indexes cannot be created by
a plain ``createIndexes`` and build asynchronously on Atlas, so they have their own entry point,
``setup_search_indexes`` (run by ``mnemos setup-indexes``); without them the store falls back to
``$text`` and exact cosine in numpy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pymongo import ASCENDING, DESCENDING, TEXT, IndexModel
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.operations import SearchIndexModel

from memory.store.rules.text import CJK_CLASS, KANA_CLASS, has_cjk, index_text, tokenize

VECTOR_INDEX = "facts_vector"
TEXT_INDEX = "facts_text"
# The words of a fact holding CJK characters (rules.text.tokenize: its CJK runs as bigrams),
# which neither index of its content finds: $text keeps a run (and a word written against it,
# "我用iphone拍照") as one token, lucene.standard a Han or Hiragana character alone. A fact
# without CJK characters holds null (its update clears the field), and is found by $text alone.
CJK_TERMS = "cjk_terms"

# The fields every fact search filters on; both search indexes must know them so that the filter
# runs inside the search (Atlas rejects a $vectorSearch filter on a field not indexed as "filter").
FILTER_FIELDS = ("agent_id", "user_id", "scope", "invalidated")

_VALID = {"invalidated": False}  # a partial index of the valid facts only


def _index(*fields: str, only: dict[str, Any] | None = None, **options: Any) -> IndexModel:
    """An index of ``fields`` in order ("-field": descending); with ``only``, a partial index of
    the documents it matches."""
    keys = [(f.removeprefix("-"), DESCENDING if f[0] == "-" else ASCENDING) for f in fields]
    if only is not None:
        options["partialFilterExpression"] = only
    return IndexModel(keys, **options)


REGULAR_INDEXES: dict[str, list[IndexModel]] = {
    "messages": [
        _index("session_id", "message_id", unique=True),
        _index("session_id", "seq", unique=True),
        # forget_user and export find a user's sessions by the messages carrying the user's id,
        # whatever their role (participants are only those who spoke with role "user").
        _index("user_id", "session_id", name="messages_user"),
    ],
    "session_agents": [
        _index("session_id", "agent_id", unique=True),
        # The cold-session scan walks this index in keyset order. Partial: formed-up states
        # (nothing pending), most of them over time, never cost the scan anything.
        _index(
            "last_message_at",
            "session_id",
            "agent_id",
            only={"pending_messages": {"$gt": 0}},
            name="session_agents_cold",
        ),
        # purge_ended_sessions walks the ended (session, agent) pairs oldest first.
        _index("ended_at", "session_id", "agent_id", name="session_agents_ended"),
    ],
    "sessions": [
        # mnemos serve: an agent's sessions (and through them its users) for the memory page.
        _index("agent_ids", name="sessions_agent"),
    ],
    "facts": [
        # Exact duplicates: one valid fact per (agent, user, scope, normalised content).
        # Invalidated facts are outside the index so that an update may take over the content
        # of an invalidated fact.
        _index(
            "agent_id",
            "user_key",
            "scope",
            "hash",
            unique=True,
            only=_VALID,
            name="facts_valid_hash",
        ),
        # A commit's snapshot: the agent's facts with the contents it writes, valid or not.
        _index("agent_id", "hash", name="facts_agent_hash"),
        _index("agent_id", "-updated_at"),
        # A commit's re-check: the agent's valid facts inserted since (rules.recheck; facts
        # updated since by the index above).
        _index("agent_id", "ins", only=_VALID, name="facts_inserted"),
        # A commit's snapshot: the agent's facts a person deleted since its earliest add was said
        # (mongo.reads.deleted_by_hand_since), found among the invalidated ones only; the
        # filter is the equality every server accepts in a partial index (a null one may not be).
        _index("agent_id", "invalidated_at", only={"invalidated": True}, name="facts_invalidated"),
        # The context FIFO by when facts were said (MongoStore._recent_facts); facts without
        # said_at are read by updated_at, with the index above.
        _index("agent_id", "-said_at", "-ins", only=_VALID, name="facts_said"),
        # "none": no stemming and no stop words, so $text matches the words that Atlas'
        # lucene.standard analyzer and our BM25 tokenizer see.
        IndexModel([("content", TEXT)], default_language="none", name="facts_content_text"),
        # The words of the facts holding CJK characters (CJK_TERMS), found beside $text's.
        _index("agent_id", CJK_TERMS, only=_VALID, name="facts_cjk_terms"),
    ],
    "reflections": [
        _index("scope_key", "absorbed_into_version", "formed_at"),
        _index("session_id"),
    ],
    "consolidated": [_index("session_id")],
    # Degraded windows (memory/degraded.py), keyed by _id: a session's (forget_user deletes
    # them, a re-form marks a range of them), and the newest first for `mnemos degraded list`.
    "degraded_windows": [
        _index("session_id", "agent_id", "after_seq", name="degraded_session"),
        _index("-degraded_at", name="degraded_newest"),
    ],
}

# consolidated is keyed by _id = ScopeKey.key: _id is its unique scope-key index.
# Collections without secondary indexes; created up front because some servers refuse to create
# a collection implicitly inside a multi-document transaction.
PLAIN_COLLECTIONS = (
    "agents",
    "sessions",
    "fact_reembed",
    "formation_commits",
    "embeddings",
    "scope_versions",
    "meta",
    "erasures",  # forget_user's tombstones (rules.erasure), keyed by agent and user
    "api_keys",  # mnemos serve: keyed by key_id, a handful of documents
    # One counter per "agent:<id>" / "user:<id>" key (Request.serialized_on), written by every
    # transaction deciding on that agent's facts or user's erasures, so that they conflict.
    # forget_user deletes its user's document (lifecycle_writes, PutErasure).
    "txn_keys",
)


@dataclass(frozen=True)
class SearchIndexSpec:
    name: str
    type: Literal["vectorSearch", "search"]
    definition: dict[str, Any]


def search_index_specs(dimension: int) -> list[SearchIndexSpec]:
    """The Atlas definitions on ``facts``: vector (cosine) with filter fields, text on content."""
    vector_fields: list[dict[str, Any]] = [
        {"type": "vector", "path": "embedding", "numDimensions": dimension, "similarity": "cosine"}
    ]
    vector_fields += [{"type": "filter", "path": field} for field in FILTER_FIELDS]
    text_fields: dict[str, Any] = {
        "content": {"type": "string", "analyzer": "lucene.standard"},
        # $search's equals/in filters need the filtered strings indexed as tokens.
        "agent_id": {"type": "token"},
        "user_id": {"type": "token"},
        "scope": {"type": "token"},
        "invalidated": {"type": "boolean"},
    }
    return [
        SearchIndexSpec(VECTOR_INDEX, "vectorSearch", {"fields": vector_fields}),
        SearchIndexSpec(
            TEXT_INDEX, "search", {"mappings": {"dynamic": False, "fields": text_fields}}
        ),
    ]


def _contains(existing: object, wanted: object) -> bool:
    """``wanted`` is part of ``existing``: servers may add defaults to a stored definition."""
    if isinstance(wanted, Mapping):
        return isinstance(existing, Mapping) and all(
            key in existing and _contains(existing[key], value) for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(existing, list)
            and len(existing) == len(wanted)
            and all(_contains(e, w) for e, w in zip(existing, wanted, strict=True))
        )
    return existing == wanted


def plan_search_indexes(
    existing: Sequence[Mapping[str, Any]], wanted: Sequence[SearchIndexSpec]
) -> tuple[list[SearchIndexSpec], list[SearchIndexSpec]]:
    """(to create, to update) given the server's ``$listSearchIndexes`` documents."""
    by_name = {doc.get("name"): doc for doc in existing}
    create: list[SearchIndexSpec] = []
    update: list[SearchIndexSpec] = []
    for spec in wanted:
        doc = by_name.get(spec.name)
        if doc is None:
            create.append(spec)
        elif not _contains(doc.get("latestDefinition", doc.get("definition")), spec.definition):
            update.append(spec)
    return create, update


async def setup_search_indexes(db: AsyncDatabase[dict[str, Any]], dimension: int) -> list[str]:
    """Create or update the Atlas Search indexes on ``facts``; return the names changed.

    Idempotent: a second run with the same dimension changes nothing. Atlas builds the indexes in
    the background; queries see them once they are READY.
    """
    facts = db["facts"]
    cursor = await facts.list_search_indexes()
    existing = [dict(doc) async for doc in cursor]
    create, update = plan_search_indexes(existing, search_index_specs(dimension))
    for spec in create:
        await facts.create_search_index(
            SearchIndexModel(spec.definition, name=spec.name, type=spec.type)
        )
    for spec in update:
        await facts.update_search_index(spec.name, spec.definition)
    return [spec.name for spec in create + update]


def cjk_terms(content: str) -> list[str] | None:
    """A fact's CJK_TERMS: its distinct words when it holds a CJK character, else None."""
    return list(dict.fromkeys(tokenize(content))) if has_cjk(index_text(content)) else None


# meta: the facts stored before CJK_TERMS were given theirs (fill_cjk_terms ran to its end), and
# the facts holding kana given them anew once the fold kept kana voicing (rules.text.fold).
_CJK_TERMS_FILLED = "cjk_terms_filled"
_KANA_REFOLDED = "cjk_terms_kana_voiced"


async def fill_cjk_terms(db: AsyncDatabase[dict[str, Any]]) -> int:
    """Give the facts stored before CJK_TERMS, holding a CJK character, their terms, and those
    holding kana their terms anew (their voicing is no longer folded off: "バス" is not "ハス");
    each once (a scan of every fact's content): a setup that dies midway leaves the rest to the
    next, and a fact a process of the previous version writes during a rolling upgrade keeps
    what it wrote until it is rewritten. Returns how many it filled."""
    missing = {"content": {"$regex": f"[{CJK_CLASS}]"}, CJK_TERMS: {"$exists": False}}
    kana = {"content": {"$regex": f"[{KANA_CLASS}]"}}
    return await _fill_once(db, _CJK_TERMS_FILLED, missing) + await _fill_once(
        db, _KANA_REFOLDED, kana
    )


async def _fill_once(db: AsyncDatabase[dict[str, Any]], done: str, query: dict[str, Any]) -> int:
    """The CJK_TERMS of the facts ``query`` finds computed, unless the meta flag ``done`` says
    it ran to its end before; then the flag."""
    if await db.meta.find_one({"_id": done}) is not None:
        return 0
    filled = 0
    async for doc in db.facts.find(query, {"content": 1}):
        await db.facts.update_one(
            {"_id": doc["_id"]}, {"$set": {CJK_TERMS: cjk_terms(doc["content"])}}
        )
        filled += 1
    await db.meta.update_one({"_id": done}, {"$set": {"done": True}}, upsert=True)
    return filled
