"""What `mnemos check-model` measures of every model call, and the answers it can save.

``Recorder`` wraps the configured provider: each call is kept with its step, what it was for (a
sample transcript or a fixed case), its time, time to first token, tokens and the model's raw
answer, valid or not. ``--record DIR`` writes them as JSON lines in the format of the shared
real-model answers (one object per call: task, what, output cap, finish_reason, usage, seconds,
speeds, content), which tests serve back through the fake OpenAI-compatible server.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

from pydantic import BaseModel

from memory.errors import MalformedOutputError, ProviderError
from memory.llm.base import LLMProvider, LLMRequest, LLMResult, Usage


@dataclass
class CallRecord:
    n: int
    task: str
    what: str
    max_completion_tokens: int
    finish_reason: str  # stop: an answer; length: cut at the cap or while looping; error
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    first_token_seconds: float | None
    content: str
    cached_tokens: int | None = None  # prompt tokens the server's prefix cache supplied
    error: str | None = None
    valid: bool = False  # set by the step: the answer passed the schema and the step's checks
    # Set by a transcript's extraction steps: the items the answer held, and those formation kept
    # (the others were echoes of the prompt, over the word limit, ungrounded, or duplicates).
    items: int | None = None
    kept: int | None = None
    model: str = ""  # the model asked: a check asks every model the tiers choose

    @property
    def generated_per_s(self) -> float | None:
        """Output tokens per second of generation (after the first token)."""
        if self.first_token_seconds is None or not self.completion_tokens:
            return None
        generating = self.seconds - self.first_token_seconds
        return self.completion_tokens / generating if generating > 0 else None

    @property
    def prompt_per_s(self) -> float | None:
        """Prompt tokens read per second (until the first token)."""
        if not self.first_token_seconds or not self.prompt_tokens:
            return None
        return self.prompt_tokens / self.first_token_seconds

    def line(self) -> dict[str, object]:
        data = asdict(self)
        usage = {"prompt_tokens": data.pop("prompt_tokens")}
        usage["completion_tokens"] = data.pop("completion_tokens")
        speeds = {
            "prompt_tokens_per_s": _round(self.prompt_per_s),
            "generated_tokens_per_s": _round(self.generated_per_s),
        }
        content = data.pop("content")
        return data | {"usage": usage} | speeds | {"content": content}


def _round(value: float | None) -> float | None:
    return round(value, 1) if value is not None else None


class Recorder(LLMProvider):
    """The configured provider, every call recorded. ``what`` names the work in progress."""

    def __init__(self, inner: LLMProvider, path: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.deterministic = inner.deterministic  # whether a step asks it again (rereads.py)
        self.calls: list[CallRecord] = []
        self.what = ""
        # Written after every call: a run stopped halfway (a slow CPU) keeps what it measured.
        self.path = path
        # Models already checked: a request one of them was sent before gets its first outcome
        # again, unasked (a higher tier's run re-forms the transcripts only for its new model).
        self.reuse: frozenset[str] = frozenset()
        self._outcomes: dict[tuple[object, ...], LLMResult[BaseModel] | ProviderError] = {}

    def flush(self) -> None:
        if self.path is not None:
            write_jsonl(self.path, self.calls)

    def _record(
        self,
        request: LLMRequest,
        usage: Usage | None,
        content: str | None,
        error: ProviderError | None,
        seconds: float,
    ) -> None:
        cut = error is not None and isinstance(error, MalformedOutputError)
        self.calls.append(
            CallRecord(
                n=len(self.calls) + 1,
                task=request.task,
                what=self.what,
                max_completion_tokens=request.max_output_tokens,
                finish_reason="length" if cut else ("error" if error else "stop"),
                prompt_tokens=usage.input_tokens if usage else 0,
                completion_tokens=usage.output_tokens if usage else 0,
                seconds=round(usage.seconds if usage and usage.seconds else seconds, 3),
                first_token_seconds=usage.first_token_seconds if usage else None,
                content=content or "",
                cached_tokens=usage.cached_input_tokens if usage else None,
                error=str(error)[:300] if error else None,
                model=request.model,
            )
        )
        self.flush()

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        key = _key(request, schema)
        if request.model in self.reuse and key in self._outcomes:
            return _again(self._outcomes[key], schema)
        started = time.perf_counter()
        try:
            result = await self.inner.generate_structured(request, schema)
        except ProviderError as e:
            content = e.content if isinstance(e, MalformedOutputError) else None
            self._record(request, None, content, e, time.perf_counter() - started)
            self._outcomes.setdefault(key, e)
            raise
        raw = result.raw if result.raw is not None else result.value.model_dump_json()
        self._record(request, result.usage, raw, None, time.perf_counter() - started)
        self._outcomes.setdefault(key, result)  # type: ignore[arg-type]
        return result

    async def close(self) -> None:
        await self.inner.close()


def _key(request: LLMRequest, schema: type[BaseModel]) -> tuple[object, ...]:
    """What makes two requests the same question."""
    return (
        request.model, request.system, request.prompt, request.temperature,
        request.max_output_tokens, schema.__name__,
    )  # fmt: skip


def _again[M: BaseModel](
    outcome: LLMResult[BaseModel] | ProviderError, schema: type[M]
) -> LLMResult[M]:
    if isinstance(outcome, ProviderError):
        raise outcome
    assert isinstance(outcome.value, schema)  # the key holds the schema
    return cast(LLMResult[M], outcome)


@dataclass
class StepFigures:
    """One step's calls, summed up."""

    calls: int
    valid: int
    seconds_p50: float
    seconds_max: float
    tokens_in: int
    tokens_cached: int
    tokens_out: int
    generated_per_s: float | None
    prompt_per_s: float | None
    items: int | None = None  # over the calls that counted them (transcripts' extractions)
    kept: int | None = None

    @classmethod
    def of(cls, calls: Iterable[CallRecord]) -> StepFigures:
        done = list(calls)
        seconds = [c.seconds for c in done]
        gen = [s for c in done if (s := c.generated_per_s) is not None]
        read = [s for c in done if (s := c.prompt_per_s) is not None]
        counted = [c for c in done if c.items is not None and c.kept is not None]
        return cls(
            calls=len(done),
            valid=sum(c.valid for c in done),
            seconds_p50=round(statistics.median(seconds), 2) if seconds else 0.0,
            seconds_max=round(max(seconds, default=0.0), 2),
            tokens_in=sum(c.prompt_tokens for c in done),
            tokens_cached=sum(c.cached_tokens or 0 for c in done),
            tokens_out=sum(c.completion_tokens for c in done),
            generated_per_s=_round(statistics.median(gen)) if gen else None,
            prompt_per_s=_round(statistics.median(read)) if read else None,
            items=sum(c.items or 0 for c in counted) if counted else None,
            kept=sum(c.kept or 0 for c in counted) if counted else None,
        )

    @property
    def valid_rate(self) -> float:
        """0 when never called: a step that was not exercised has not shown it works."""
        return self.valid / self.calls if self.calls else 0.0


def write_jsonl(path: Path, calls: list[CallRecord]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(c.line()) + "\n" for c in calls))
