"""Each API key's budgets: a token bucket per key and kind of operation, in this process.

Three kinds, because their costs differ by orders of magnitude: ``read`` (context, search,
listings: milliseconds, served from caches and indexes), ``write`` (recording messages, forming,
edits: a transaction and perhaps a workflow start) and ``heavy`` (erasing a user: every memory of
them and their workflow executions). A bucket holds up to ``burst`` tokens and refills at
``per_second``; a request takes one token or, when none is left, is refused before its handler
runs, so a refused request changes nothing. Budgets follow the key (a key is bound to one agent
set, so this is that agent set's budget through that key); the HTTP API, the MCP tools at /mcp
and the memory page draw on the same buckets, so no door bypasses them.

The buckets live in this process's memory: each replica or worker process of ``mnemos serve``
keeps its own, so N processes admit up to N times a budget. A shared limit across replicas
belongs in the gateway in front of them (docs/http_api.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import structlog

from memory.settings import RateLimitSettings

log = structlog.get_logger("serve.rate_limit")

Kind = Literal["read", "write", "heavy"]
KINDS: tuple[Kind, ...] = ("read", "write", "heavy")

# Operations whose kind is not their method's: POSTs that only read, a DELETE that erases a user.
_KIND_OF_OPERATION: dict[str, Kind] = {
    "search": "read",
    "session_start": "read",
    "forget_user": "heavy",
    "export_user": "heavy",
}
# Past this many buckets, the full ones are dropped: a full bucket is a fresh one.
_PRUNE_AT = 10_000


def kind_of(method: str, operation_id: str) -> Kind:
    """The budget an HTTP operation draws on: by its id where named above, else by its method."""
    named = _KIND_OF_OPERATION.get(operation_id)
    if named is not None:
        return named
    return "read" if method.upper() in ("GET", "HEAD") else "write"


@dataclass(frozen=True)
class Budget:
    per_second: float
    burst: int

    @property
    def window(self) -> int:
        """Seconds an empty bucket takes to fill: the window of the advertised policy."""
        return max(1, math.ceil(self.burst / self.per_second))


@dataclass(frozen=True)
class Refusal:
    """Why a request was refused, and when the key may try again."""

    kind: Kind
    budget: Budget
    retry_after: int  # whole seconds, at least 1: when one token is back

    @property
    def detail(self) -> str:
        b = self.budget
        return (
            f"this key is over its {self.kind} budget ({b.per_second:g}/s, bursts of "
            f"{b.burst}, per server process): retry after {self.retry_after} s"
        )

    def headers(self) -> dict[str, str]:
        """``Retry-After`` (RFC 9110) and the IETF draft's ``RateLimit-Policy`` / ``RateLimit``
        (draft-ietf-httpapi-ratelimit-headers: quota q per window w; r left, t seconds to wait)."""
        return {
            "Retry-After": str(self.retry_after),
            "RateLimit-Policy": f'"{self.kind}";q={self.budget.burst};w={self.budget.window}',
            "RateLimit": f'"{self.kind}";r=0;t={self.retry_after}',
        }


@dataclass
class _Bucket:
    tokens: float
    at: float
    refusing: bool = False  # logged once per episode of refusals, not once per request


class RateLimiter:
    """Token buckets per (key, kind). ``take`` neither awaits nor blocks, so on one event loop
    it is atomic. ``clock`` (seconds, monotonic) is injectable so tests move time themselves."""

    def __init__(
        self,
        budgets: Mapping[Kind, Budget] | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.budgets = dict(budgets) if budgets is not None else None
        self.clock = clock
        self._buckets: dict[tuple[str, Kind], _Bucket] = {}

    @classmethod
    def from_settings(
        cls, settings: RateLimitSettings, clock: Callable[[], float] = time.monotonic
    ) -> RateLimiter:
        if not settings.enabled:
            return cls(None, clock)
        budgets: dict[Kind, Budget] = {
            "read": Budget(settings.read_per_second, settings.read_burst),
            "write": Budget(settings.write_per_second, settings.write_burst),
            "heavy": Budget(settings.heavy_per_second, settings.heavy_burst),
        }
        return cls(budgets, clock)

    @property
    def enabled(self) -> bool:
        return self.budgets is not None

    def take(self, key_id: str, kind: Kind) -> Refusal | None:
        """Take one token of the key's ``kind`` budget: None when granted, else the refusal
        (the bucket is left as it was: a refused request costs nothing)."""
        if self.budgets is None:
            return None
        budget = self.budgets[kind]
        now = self.clock()
        bucket = self._buckets.get((key_id, kind))
        if bucket is None:
            if len(self._buckets) >= _PRUNE_AT:
                self._prune(now)
            bucket = self._buckets[(key_id, kind)] = _Bucket(float(budget.burst), now)
        else:
            elapsed = max(0.0, now - bucket.at)
            bucket.tokens = min(float(budget.burst), bucket.tokens + elapsed * budget.per_second)
            bucket.at = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            bucket.refusing = False
            return None
        wait = math.ceil((1.0 - bucket.tokens) / budget.per_second)
        if not bucket.refusing:
            bucket.refusing = True
            log.warning("rate limited", key_id=key_id, kind=kind, retry_after=wait)
        return Refusal(kind, budget, max(1, wait))

    def _prune(self, now: float) -> None:
        assert self.budgets is not None
        budgets = self.budgets
        full = [
            ident
            for ident, b in self._buckets.items()
            if b.tokens + (now - b.at) * budgets[ident[1]].per_second >= budgets[ident[1]].burst
        ]
        for ident in full:
            del self._buckets[ident]
