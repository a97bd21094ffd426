"""What every request handler reaches through the app: the client, the key store, each key's
budgets, the UI links."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from client.management import MemoryManager
from client.memory_client import MemoryClient
from serve.keys import ApiKeyStore
from serve.rate_limit import RateLimiter


@dataclass
class Services:
    memory: MemoryClient
    keys: ApiKeyStore
    temporal_ui_url: str
    namespace: str
    limiter: RateLimiter

    @property
    def manager(self) -> MemoryManager:
        return self.memory.manager


async def services(request: Request) -> Services:
    """Async: a sync dependency would cost a worker-thread hop on every request."""
    found: Services = request.app.state.services
    return found
