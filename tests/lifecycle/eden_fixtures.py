"""Eden documents shaped as the seeds' models describe them (ObjectIds, naive UTC dates)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId

T = datetime(2025, 12, 1, 12, 0)  # naive, as pymongo returns BSON dates


def oid(n: int) -> ObjectId:
    return ObjectId(f"{n:024x}")


AGENT_A, AGENT_B = oid(0xA), oid(0xB)
ALICE, BOB = oid(0xA11CE), oid(0xB0B)
SESSION = oid(0x5E55)
SHARD_STYLE, SHARD_PRODUCT, SHARD_OLD = oid(0x51), oid(0x52), oid(0x53)


def session_memory(n: int, kind: str, content: str, **kw: Any) -> dict[str, Any]:
    return {
        "_id": oid(n),
        "agent_id": kw.pop("agent_id", AGENT_A),
        "source_session_id": SESSION,
        "memory_type": kind,
        "content": content,
        "source_message_ids": [oid(n + 1000)],
        "related_users": kw.pop("related_users", []),
        "shard_id": kw.pop("shard_id", None),
        "agent_owner": oid(0x0E),
        "created_at": T + timedelta(minutes=n % 100),
        **kw,
    }


# ---------------------------------------------------------------- v1, agent A

EPISODE, DIRECTIVE_OLD, DIRECTIVE_NEW, DIRECTIVE_GROUP = 101, 102, 103, 104
SUGGESTION_OLD, SUGGESTION_NEW = 111, 112
FACT_DUP, FACT_INACTIVE, FACT_KEPT = 121, 122, 123

MEMORY_SESSIONS = [
    session_memory(EPISODE, "episode", "Alice and the agent planned a trip", related_users=[ALICE]),
    session_memory(DIRECTIVE_OLD, "directive", "Alice wants short answers", related_users=[ALICE]),
    session_memory(DIRECTIVE_NEW, "directive", "Alice prefers metric units", related_users=[ALICE]),
    session_memory(
        DIRECTIVE_GROUP, "directive", "Keep the tone formal", related_users=[ALICE, BOB]
    ),
    session_memory(SUGGESTION_OLD, "suggestion", "Ask before booking", shard_id=SHARD_STYLE),
    session_memory(
        SUGGESTION_NEW, "suggestion", "Offer a summary at the end", shard_id=SHARD_STYLE
    ),
    session_memory(FACT_DUP, "fact", "The office opens at 9am", shard_id=SHARD_PRODUCT),
    session_memory(FACT_INACTIVE, "fact", "The old API is v1", shard_id=SHARD_OLD),
    session_memory(FACT_KEPT, "fact", "Pricing starts at 10 EUR", shard_id=SHARD_PRODUCT),
]

MEMORY_USER = [
    {
        "_id": oid(201),
        "agent_id": AGENT_A,
        "user_id": ALICE,
        "content": "Alice likes concise replies.",
        "unabsorbed_memory_ids": [oid(DIRECTIVE_NEW)],
        "fully_formed_memory": "## Consolidated user memory:\nAlice likes concise replies.",
        "last_updated_at": T,
    },
    {
        "_id": oid(202),
        "agent_id": AGENT_A,
        "user_id": BOB,
        "content": "",
        "unabsorbed_memory_ids": [],
        "fully_formed_memory": "",
        "last_updated_at": T,
    },
    # agent B's v1 blob for Alice, superseded by its memory2 blob
    {
        "_id": oid(203),
        "agent_id": AGENT_B,
        "user_id": ALICE,
        "content": "Old v1 blob",
        "unabsorbed_memory_ids": [],
        "fully_formed_memory": "Old v1 blob",
        "last_updated_at": T - timedelta(days=30),
    },
]


def shard(_id: ObjectId, name: str, content: str, active: bool, **kw: Any) -> dict[str, Any]:
    return {
        "_id": _id,
        "agent_id": AGENT_A,
        "shard_name": name,
        "extraction_prompt": f"Remember {name}",
        "is_active": active,
        "content": content,
        "unabsorbed_memory_ids": kw.get("unabsorbed", []),
        "facts": kw.get("facts", []),
        "fully_formed_memory": content,
        "last_updated_at": T,
        "max_facts_per_shard": 100,
        "max_agent_memories_before_consolidation": 16,
    }


MEMORY_AGENT = [
    shard(SHARD_STYLE, "style", "Use plain language.", True, unabsorbed=[oid(SUGGESTION_NEW)]),
    shard(SHARD_PRODUCT, "product", "Users ask about pricing.", True, facts=[oid(FACT_DUP)]),
    shard(SHARD_OLD, "old", "Obsolete notes.", False),
]

# ---------------------------------------------------------------- memory2

VECTOR = [0.25, -0.5, 0.125, 1.0]
M2_FACT_USER, M2_FACT_AGENT, M2_FACT_NO_USER, M2_FACT_A_DUP = 301, 302, 303, 304
M2_R_ABSORBED, M2_R_BUFFERED, M2_R_SESSION, M2_R_AGENT_NO_BLOB = 311, 312, 313, 314
M2_BLOB_USER, M2_BLOB_SESSION = 321, 322

MEMORY2_FACTS = [
    {
        "_id": oid(M2_FACT_USER),
        "content": "Alice is allergic to peanuts",
        "hash": "5f1d…",
        "embedding": VECTOR,
        "scope": "user",
        "agent_id": AGENT_B,
        "user_id": ALICE,
        "session_id": SESSION,
        "formed_at": T,
        "access_count": 3,
        "version": 2,
        "previous_content": "Alice is allergic to nuts",
        "updated_at": T + timedelta(days=1),
        "update_history": [
            {"content": "Alice is allergic to nuts", "updated_at": T, "reason": "more precise"}
        ],
    },
    {
        "_id": oid(M2_FACT_AGENT),
        "content": "The agent answers in French on Fridays",
        "hash": "…",
        "scope": "agent",
        "agent_id": AGENT_B,
        "user_id": None,
        "session_id": SESSION,
        "formed_at": T,
        "access_count": 0,
        "version": 1,
    },
    {
        "_id": oid(M2_FACT_NO_USER),
        "content": "Someone likes tea",
        "scope": "user",
        "agent_id": AGENT_B,
        "user_id": None,
        "formed_at": T,
        "version": 1,
    },
    {
        "_id": oid(M2_FACT_A_DUP),
        "content": "The office opens at 9am.",
        "embedding": VECTOR,
        "embedding_model": "text-embedding-3-large",
        "scope": "agent",
        "agent_id": AGENT_A,
        "formed_at": T,
        "version": 1,
    },
]


def reflection(n: int, scope: str, content: str, absorbed: bool, **kw: Any) -> dict[str, Any]:
    return {
        "_id": oid(n),
        "content": content,
        "scope": scope,
        "agent_id": AGENT_B,
        "user_id": kw.get("user_id"),
        "session_id": SESSION,
        "absorbed": absorbed,
        "formed_at": T,
    }


MEMORY2_REFLECTIONS = [
    reflection(M2_R_ABSORBED, "user", "Alice likes examples", True, user_id=ALICE),
    reflection(M2_R_BUFFERED, "user", "Alice reads on mobile", False, user_id=ALICE),
    reflection(M2_R_SESSION, "session", "They are debugging a deploy", False),
    reflection(M2_R_AGENT_NO_BLOB, "agent", "Users like tables", True),
]

MEMORY2_CONSOLIDATED = [
    {
        "_id": oid(M2_BLOB_USER),
        "scope": "user",
        "agent_id": AGENT_B,
        "user_id": ALICE,
        "session_id": None,
        "consolidated_content": "Alice likes examples and is allergic to peanuts.",
        "word_limit": 400,
        "unabsorbed_ids": [oid(M2_R_BUFFERED)],
        "last_consolidated_at": T,
    },
    {
        "_id": oid(M2_BLOB_SESSION),
        "scope": "session",
        "agent_id": AGENT_B,
        "user_id": None,
        "session_id": SESSION,
        "consolidated_content": "Debugging a deploy.",
        "word_limit": 200,
        "unabsorbed_ids": [],
        "last_consolidated_at": T,
    },
]

ALL = {
    "memory_sessions": MEMORY_SESSIONS,
    "memory_user": MEMORY_USER,
    "memory_agent": MEMORY_AGENT,
    "memory2_facts": MEMORY2_FACTS,
    "memory2_reflections": MEMORY2_REFLECTIONS,
    "memory2_consolidated": MEMORY2_CONSOLIDATED,
}
