"""Test doubles for the providers: scripted, deterministic, zero latency. The store is always real."""

from __future__ import annotations

import hashlib
import inspect
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from memory.embedding.base import Embedder, EmbeddingBatch, normalize
from memory.errors import InputRefusedError, ProviderError
from memory.llm.base import LLMProvider, LLMRequest, LLMResult, Task, Usage
from memory.models import AgentConfig
from memory.prompts import (
    ConsolidateInput,
    DecideFactsInput,
    ExtractFactsInput,
    ExtractReflectionsInput,
    PromptMessage,
)
from memory.prompts.consolidate import ConsolidatedSection, ConsolidatedSections
from memory.prompts.decide_facts import ExistingFactShown, NewFactShown

Reply = BaseModel | dict[str, Any] | Exception | Callable[[LLMRequest], Any]

_WORD = re.compile(r"[a-z0-9]+")


class WordHashEmbedder(Embedder):
    """Bag-of-words hashed into 256 dimensions: texts sharing words are similar, as with a real model."""

    model = "test-wordhash-256"
    dimension = 256

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        return EmbeddingBatch(vectors=normalize(out), model=self.model, dimension=self.dimension)


class ScriptedLLM(LLMProvider):
    """Replies per task from a queue; a default per task when the queue is empty.

    A reply may be a model instance (or its fields as a dict), an exception to raise, or a callable
    of the request returning one. Every request is recorded.
    """

    name = "scripted"

    def __init__(self, defaults: dict[Task, Reply] | None = None) -> None:
        self.queues: dict[Task, list[Reply]] = defaultdict(list)
        self.defaults: dict[Task, Reply] = dict(defaults or {})
        self.requests: list[LLMRequest] = []

    def script(self, task: Task, *replies: Reply) -> None:
        self.queues[task].extend(replies)

    def calls(self, task: Task) -> list[LLMRequest]:
        return [r for r in self.requests if r.task == task]

    async def _next(self, request: LLMRequest) -> BaseModel | dict[str, Any]:
        self.requests.append(request)
        queue = self.queues[request.task]
        reply: Any = queue.pop(0) if queue else self.defaults.get(request.task)
        if reply is None:
            raise AssertionError(f"no scripted reply for task {request.task}")
        if callable(reply) and not isinstance(reply, BaseModel | Exception):
            reply = reply(request)
            if inspect.isawaitable(reply):
                reply = await reply
        if isinstance(reply, Exception):
            raise reply
        return reply  # type: ignore[no-any-return]

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        value = await self._next(request)
        return LLMResult(
            value=schema.model_validate(
                value.model_dump() if isinstance(value, BaseModel) else value
            ),
            usage=Usage(
                provider=self.name,
                model=request.model,
                input_tokens=len(request.prompt) // 4,
                output_tokens=10,
            ),
        )


def transient(message: str = "rate limited") -> ProviderError:
    return ProviderError(message, retryable=True, status=429, retry_after=0.01)


def permanent(message: str = "bad request") -> ProviderError:
    return ProviderError(message, retryable=False, status=400)


# Small typed inputs for provider tests, which script their own system and prompt text.
_EVE = AgentConfig(agent_id="eve", name="Eve")
FACTS_INPUT = ExtractFactsInput(agent=_EVE, messages=[], max_words=30)
DECIDE_INPUT = DecideFactsInput(
    new_facts=[NewFactShown(index=0, content="Alice is 31", scope="user")],
    existing=[ExistingFactShown(index=0, content="Alice is 30", candidate_for=(0,))],
    max_words=30,
)
CONSOLIDATE_INPUT = ConsolidateInput(
    agent=_EVE,
    scope="user",
    current_content="",
    current_version=0,
    reflections=["Likes tea"],
    word_limit=300,
)


def facts_input(request: LLMRequest) -> ExtractFactsInput:
    """The typed input of an extract_facts request (what the test's fake model reads)."""
    assert isinstance(request.task_input, ExtractFactsInput)
    return request.task_input


def reflections_input(request: LLMRequest) -> ExtractReflectionsInput:
    """The typed input of an extract_reflections request."""
    assert isinstance(request.task_input, ExtractReflectionsInput)
    return request.task_input


def transcript_of(request: LLMRequest) -> list[PromptMessage]:
    """The conversation an extract_facts or extract_reflections request shows the model."""
    assert isinstance(request.task_input, ExtractFactsInput | ExtractReflectionsInput)
    return request.task_input.messages


def echo_consolidation(request: LLMRequest) -> ConsolidatedSections:
    """A well-behaved consolidation: the blob's bullets, then the new reflections, under NOTES."""
    p = request.task_input
    assert isinstance(p, ConsolidateInput)
    old = [ln[2:] for ln in p.current_content.splitlines() if ln.startswith("- ")]
    return consolidated(*old, *p.reflections)


def refused_forbidden(request: LLMRequest) -> ConsolidatedSections:
    """A consolidation whose provider's content filter refuses any prompt holding the word
    'forbidden' (the rest drafted as echo_consolidation does)."""
    p = request.task_input
    assert isinstance(p, ConsolidateInput)
    if any("forbidden" in r for r in p.reflections):
        raise InputRefusedError("refused by the content filter", provider="fake")
    return echo_consolidation(request)


def consolidated(*items: str, title: str = "NOTES") -> ConsolidatedSections:
    """A consolidation answer: one section holding ``items``."""
    return ConsolidatedSections(sections=[ConsolidatedSection(title=title, items=list(items))])


class Faults:
    """Failures to inject into a method: ``before`` calls fail without running it, then ``after``
    calls run it and fail anyway (the write happened, the reply was lost, as in a crash)."""

    def __init__(self, before: int = 0, after: int = 0, error: Exception | None = None) -> None:
        self.before = before
        self.after = after
        self.error = error or ConnectionError("injected failure")
        self.calls = 0


class FaultyProxy:
    """Wraps a store or an embedder; methods named in ``faults`` fail as configured."""

    def __init__(self, target: Any, faults: dict[str, Faults]) -> None:
        self._target = target
        self._faults = faults

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        fault = self._faults.get(name)
        if fault is None or not callable(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            fault.calls += 1
            if fault.before > 0:
                fault.before -= 1
                raise fault.error
            result = await attr(*args, **kwargs)
            if fault.after > 0:
                fault.after -= 1
                raise fault.error
            return result

        return call
