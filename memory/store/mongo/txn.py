"""Multi-document transactions of the MongoDB store, retried when the server reports a conflict."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import ConnectionFailure, DuplicateKeyError, OperationFailure, PyMongoError

from memory.errors import StoreUnavailableError
from memory.store.retry import retry_conflicts

_WRITE_CONFLICT = 112


def _is_transient(exc: Exception) -> bool:
    """Another writer got in first; running the whole transaction again sees its writes.

    MongoDB labels write conflicts TransientTransactionError (code 112); mongoeco reports them
    at commit as a bare OperationFailure ("Write conflict during transaction commit"). A duplicate
    key inside a transaction means a concurrent transaction inserted the same key after our
    reads checked for it: the retry finds it and takes the "already there" branch.
    """
    if not isinstance(exc, PyMongoError):
        return False
    if exc.has_error_label("TransientTransactionError") or isinstance(exc, DuplicateKeyError):
        return True
    return isinstance(exc, OperationFailure) and (
        exc.code == _WRITE_CONFLICT or "write conflict" in str(exc).lower()
    )


async def _reset_server_transaction(
    session: AsyncClientSession, probe: AsyncCollection[dict[str, Any]]
) -> None:
    """Make the server forget the failed transaction before the session goes back to the pool.

    mongoeco keeps a transaction whose commit failed open on its server session, and the next
    transaction (or plain read) on that pooled session then runs on the stale snapshot and
    conflicts forever. A read in a new transaction followed by an explicit abort clears it;
    on MongoDB it is a harmless aborted read-only transaction, paid only after a conflict.
    """
    try:
        await session.start_transaction()
        await probe.find_one({}, {"_id": 1}, session=session)
        await session.abort_transaction()
    except PyMongoError:
        pass  # best effort: the retry reports any real problem


async def write_keys(
    db: AsyncDatabase[dict[str, Any]], s: AsyncClientSession, keys: Iterable[str]
) -> None:
    """Write each serialization key's document (Request.serialized_on), in the order given.

    Transactions here are snapshot-isolated: they conflict only on a document both write. Two
    deciding on data the other changes share a key, and each writes its key's document first:
    the second to write it fails (WriteConflict, or DuplicateKey on a first upsert) and is
    retried (run_transaction)."""
    for key in keys:
        await db.txn_keys.update_one({"_id": key}, {"$inc": {"writes": 1}}, upsert=True, session=s)


def mongo_outage(exc: BaseException) -> bool:
    """Whether ``exc`` is the server out of reach: no server to select within the timeout, a
    connection refused, lost or timed out (pymongo's ConnectionFailure and its subclasses
    ServerSelectionTimeoutError, AutoReconnect, NetworkTimeout). A command the server answered
    with an error is not."""
    return isinstance(exc, ConnectionFailure)


async def _committed[T](
    session: AsyncClientSession, body: Callable[[AsyncClientSession], Awaitable[T]]
) -> T:
    """``body`` then the commit, a connection failure in either raised as StoreUnavailableError.

    Inside a transaction pymongo labels a connection failure TransientTransactionError (or, at
    commit, UnknownTransactionCommitResult), which with_transaction retries for 120 s and
    _is_transient would retry 40 times more: minutes for a server that is down. Our own error,
    raised from the callback, carries no label, so neither retries it and the caller hears
    "retry later" within the connect timeout. Committing here, not in with_transaction, keeps
    its commit retry off an outage; a conflict at commit still leaves labelled as before.
    """
    try:
        result = await body(session)
        await session.commit_transaction()
    except PyMongoError as exc:
        if mongo_outage(exc):
            raise StoreUnavailableError() from exc
        raise
    return result


async def run_transaction[T](
    db: AsyncDatabase[dict[str, Any]],
    body: Callable[[AsyncClientSession], Awaitable[T]],
) -> T:
    """Run ``body`` in one transaction and commit; any exception aborts everything it wrote.

    ``with_transaction`` already retries labelled transient errors; retry_conflicts adds the
    unlabelled conflicts. The server out of reach is neither (_committed).
    """

    async def attempt() -> T:
        async with db.client.start_session() as session:
            try:
                return await session.with_transaction(lambda s: _committed(s, body))
            except PyMongoError as exc:
                if _is_transient(exc):
                    await _reset_server_transaction(session, db["meta"])
                raise

    return await retry_conflicts(attempt, _is_transient, attempts=40, first_delay=0.002)
