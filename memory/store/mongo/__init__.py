"""The MongoDB backend (see store); Atlas Search index set-up in indexes."""

from memory.store.mongo.store import MongoStore

__all__ = ["MongoStore"]
