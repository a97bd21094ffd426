"""The store out of reach, once for every backend: a driver's error that each backend names as
"cannot be reached" (its ``is_outage``) leaves the store as StoreUnavailableError, its driver's
text kept as the cause (for the logs, never the caller). Everything else leaves as it came.

Callers then tell "ask again later" (an API's 503, an activity Temporal retries) from a bug
without knowing any driver. A store fails fast: it waits at most CONNECT_TIMEOUT_SECONDS for a
connection, so that a request answers promptly instead of holding its caller."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

from memory.errors import StoreUnavailableError

# How long a call waits for a connection (a pool's free connection, a server to select) before
# the store counts as unavailable: a server that answers connects in milliseconds, and a
# request's caller had better hear "retry later" than wait out the drivers' 30 s defaults.
CONNECT_TIMEOUT_SECONDS = 5.0

type IsOutage = Callable[[BaseException], bool]


@contextmanager
def outages_translated(is_outage: IsOutage) -> Iterator[None]:
    """Raise a driver's error that ``is_outage`` names as StoreUnavailableError."""
    try:
        yield
    except StoreUnavailableError:
        raise
    except Exception as exc:
        if not is_outage(exc):
            raise
        raise StoreUnavailableError() from exc


def _translating[**P, T](
    method: Callable[P, Coroutine[Any, Any, T]], is_outage: IsOutage
) -> Callable[P, Coroutine[Any, Any, T]]:
    @functools.wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        with outages_translated(is_outage):
            return await method(*args, **kwargs)

    return call


def translating_outages[C: type](is_outage: IsOutage) -> Callable[[C], C]:
    """A class decorator for a store with no one place every call passes through (MongoDB's
    collections are used directly): each public coroutine method translates its outages."""

    def decorate(cls: C) -> C:
        for name, member in inspect.getmembers(cls, inspect.iscoroutinefunction):
            if not name.startswith("_"):
                setattr(cls, name, _translating(member, is_outage))
        return cls

    return decorate
