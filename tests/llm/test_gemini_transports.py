"""Gemini transport failures classify the same whichever HTTP package google-genai sends through.

The SDK sends through httpx2 by default and through httpx when GOOGLE_GENAI_HTTP_CLIENT=httpx; the
two packages raise unrelated exception classes. Real SDK, real sockets, nothing patched.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from types import ModuleType

import pytest

from memory.errors import ProviderError
from memory.llm.base import LLMRequest
from memory.llm.errors import to_provider_error
from memory.llm.gemini_provider import GeminiProvider
from memory.prompts.decide_facts import FactDecisions
from tests.fake_provider_server import FakeProviderServer, Reply
from tests.fakes import DECIDE_INPUT

API_KEY = "AIzaSyTest0123456789abcdefghijklmnop"
REQUEST = LLMRequest(
    task_input=DECIDE_INPUT,
    model="gemini-3-flash-preview",
    system="You decide whether facts are new.",
    prompt="<new_facts>0: Alice is 31</new_facts>",
    temperature=0.0,
    max_output_tokens=64,
)


@contextmanager
def nobody_listening() -> Iterator[str]:
    """A port that was just freed: the connection is refused."""
    with FakeProviderServer() as gone:
        url = gone.url
    yield url


@contextmanager
def hanging_up() -> Iterator[str]:
    """A server that reads the request and closes the connection without a word."""
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)  # accept() wakes up to see ``stop``; close() would not wake it

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        listener.close()


@contextmanager
def too_slow() -> Iterator[str]:
    """A server that answers long after the client's timeout."""
    with FakeProviderServer() as server:
        server.script(Reply(body={}, delay=30))
        yield server.url


SERVERS: dict[str, tuple[Callable[[], AbstractContextManager[str]], str]] = {
    "refused": (nobody_listening, "connection failed"),
    "closed": (hanging_up, "connection failed"),
    "timeout": (too_slow, "timed out"),
}


@pytest.mark.parametrize("case", sorted(SERVERS))
@pytest.mark.parametrize("backend", ["httpx", "httpx2"])
async def test_transport_failures_are_retryable_provider_errors_on_both_backends(
    backend: str, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve, words = SERVERS[case]
    # How a user picks the SDK's transport; the SDK reads it when the client is built.
    monkeypatch.setenv("GOOGLE_GENAI_HTTP_CLIENT", backend)
    with serve() as url:
        provider = GeminiProvider(api_key=API_KEY, timeout=0.5, base_url=url)
        # Guard: the SDK really sends through the package under test (else both runs test one).
        transport = type(provider._client._api_client._async_httpx_client).__mro__
        assert any(cls.__module__.split(".")[0] == backend for cls in transport)
        try:
            with pytest.raises(ProviderError) as caught:
                await provider.generate_structured(REQUEST, FactDecisions)
        finally:
            await provider.close()

    error = caught.value
    assert error.retryable and error.status is None and error.provider == "gemini"
    assert words in str(error)
    assert API_KEY not in str(error)
    # No SDK exception chained: its text could carry the request.
    assert error.__cause__ is None and error.__suppress_context__


def aiohttp_stand_in() -> ModuleType:
    """aiohttp's transport exceptions under their names and in their hierarchy, minus the
    stdlib bases (ServerTimeoutError is also an asyncio.TimeoutError, ClientOSError an OSError):
    classified here, they were found through sys.modules, not through those bases."""
    module = ModuleType("aiohttp")

    class ClientError(Exception):
        pass

    class ClientConnectionError(ClientError):
        pass

    class ServerDisconnectedError(ClientConnectionError):
        pass

    class ServerTimeoutError(ClientConnectionError):
        pass

    class ClientPayloadError(ClientError):
        pass

    for cls in (
        ClientError,
        ClientConnectionError,
        ServerDisconnectedError,
        ServerTimeoutError,
        ClientPayloadError,
    ):
        setattr(module, cls.__name__, cls)
    return module


AIOHTTP_FAILURES = {
    "ClientConnectionError": "connection failed",
    "ServerDisconnectedError": "connection failed",
    "ClientPayloadError": "connection failed",
    "ServerTimeoutError": "timed out",
}


@pytest.mark.parametrize(("name", "words"), sorted(AIOHTTP_FAILURES.items()))
def test_aiohttp_transport_failures_are_retryable_once_the_sdk_imported_aiohttp(
    name: str, words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiohttp is not installed here (nor a dependency of ours): a stand-in module under its
    name, as google-genai would have imported it, carries its exception classes."""
    module = aiohttp_stand_in()
    failure = getattr(module, name)(f"{API_KEY} lost")
    # Not imported: not ours to know, so left to raise.
    monkeypatch.delitem(sys.modules, "aiohttp", raising=False)
    assert to_provider_error(failure, provider="gemini") is None

    monkeypatch.setitem(sys.modules, "aiohttp", module)
    error = to_provider_error(failure, provider="gemini", secrets=[API_KEY])

    assert error is not None and error.retryable and error.status is None
    assert words in str(error) and name in str(error)
    assert API_KEY not in str(error)
