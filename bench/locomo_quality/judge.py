"""Answer each question from what mnemos gives the agent, then judge the answer (LLM-as-a-judge, "J").

Both go to any OpenAI-compatible chat endpoint, through a disk cache keyed by the request (sha256
of model + messages + parameters): a re-run costs nothing and an interrupted run resumes where it
stopped. An answer the judge's reply does not label is counted WRONG and reported.

The judging rules are those mem0 published for LoCoMo (the ``ACCURACY_PROMPT`` of mem0ai/mem0,
``evaluation/metrics/llm_judge.py``; Chhikara et al. 2025, "Mem0: Building Production-Ready AI
Agents with Scalable Long-Term Memory", arXiv:2504.19413): label CORRECT or WRONG, generously (an
answer that touches the gold answer's topic, or names the same date or period in another form, is
CORRECT), a one-sentence reason, the label as JSON under "label". ``JUDGE_PROMPT`` restates those
rules in our own words; for figures strictly comparable with published J scores, pass mem0's
prompt text itself with ``--judge-prompt FILE`` (placeholders {question}, {gold_answer},
{generated_answer}).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

JUDGE_PROMPT = """\
Label a generated answer to a question as CORRECT or WRONG. You get:
    (1) a question one person asked about another person, from their earlier conversations,
    (2) the gold (ground-truth) answer,
    (3) the generated answer.

The gold answer is usually short and names the topic asked about. The generated answer may be
longer: grade generously. If it is about the same thing as the gold answer, it is CORRECT.

For questions about time, the gold answer is a date, month, year or period. The generated answer
may be longer or use a relative reference ("last Tuesday", "next month"): grade generously. If it
means the same date or period as the gold answer, it is CORRECT, whatever the format ("May 7th"
and "7 May" are the same date).

Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

Give a one-sentence reason, then the label. Never write both CORRECT and WRONG.
Return the label as JSON with the key "label".
"""

ANSWER_SYSTEM = (
    "You are the assistant of a long conversation between {speakers}. Answer the question from "
    "your memory below only: its memory context and the facts your search_facts tool found. Reply "
    "with a short answer (a few words; a date for a question about time, resolved against the "
    "dates in the memories). If the memories do not hold the answer, say so briefly."
)
ANSWER_USER = "{context}\n\nsearch_facts results:\n{results}\n\nQuestion: {question}"
_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")
_PLACEHOLDERS = ("{question}", "{gold_answer}", "{generated_answer}")


class JudgePromptError(ValueError):
    pass


def load_judge_prompt(path: Path | None) -> str:
    if path is None:
        return JUDGE_PROMPT
    text = path.read_text(encoding="utf-8")
    missing = [p for p in _PLACEHOLDERS if p not in text]
    if missing:
        raise JudgePromptError(f"{path}: the judge prompt lacks {', '.join(missing)}")
    return text


class JsonFiles:
    """One JSON file per key under ``root`` (``root/ab/abcdef….json``), written atomically (tmp +
    rename), so an interrupted run never leaves half an entry."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _load(self, key: str) -> Any | None:
        path = self._path(key)
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def _save(self, key: str, entry: Any, indent: int | None = None) -> None:
        path = self._path(key)
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(".tmp")
        text = json.dumps(entry, indent=indent, ensure_ascii=indent is None)
        tmp.write_text(text + ("\n" if indent else ""), encoding="utf-8")
        tmp.replace(path)


class DiskCache(JsonFiles):
    """The answer to each request, under the sha256 of the request."""

    @staticmethod
    def key(request: dict[str, Any]) -> str:
        canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def get(self, key: str) -> str | None:
        entry = self._load(key)
        return None if entry is None else str(entry["content"])

    def put(self, key: str, request: dict[str, Any], content: str) -> None:
        self._save(key, {"request": request, "content": content})


@dataclass
class ChatModel:
    """One model on an OpenAI-compatible endpoint, every call through the cache."""

    model: str
    client: AsyncOpenAI
    cache: DiskCache
    params: dict[str, Any]
    requests: int = 0  # calls that reached the endpoint
    cached: int = 0

    async def complete(self, messages: list[dict[str, str]]) -> str:
        request = {"model": self.model, "messages": messages, **self.params}
        key = DiskCache.key(request)
        if (hit := self.cache.get(key)) is not None:
            self.cached += 1
            return hit
        self.requests += 1
        reply = await self.client.chat.completions.create(**request)
        content = reply.choices[0].message.content or ""
        self.cache.put(key, request, content)
        return content


def endpoint(base_url: str | None, api_key: str | None) -> AsyncOpenAI:
    """--eval-base-url / --eval-api-key, else OPENAI_BASE_URL / OPENAI_API_KEY."""
    key = api_key or os.environ.get("MNEMOS_BENCH_EVAL_API_KEY") or os.environ.get("OPENAI_API_KEY")
    return AsyncOpenAI(
        base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
        api_key=key or "not-needed",  # local OpenAI-compatible servers take any key
        max_retries=3,
        timeout=120,
    )


def parse_label(reply: str) -> bool | None:
    """True for CORRECT, False for WRONG, None when the reply says neither (or both)."""
    try:
        label = json.loads(reply[reply.index("{") : reply.rindex("}") + 1]).get("label")
        if isinstance(label, str) and label.strip().upper() in ("CORRECT", "WRONG"):
            return label.strip().upper() == "CORRECT"
    except (ValueError, AttributeError):
        pass
    found = set(_LABEL.findall(reply.upper()))
    return found == {"CORRECT"} if len(found) == 1 else None


def fill(prompt: str, *, question: str, gold: str, answer: str) -> str:
    """The three placeholders replaced; any other brace in a prompt file stays as it is."""
    values = dict(zip(_PLACEHOLDERS, (question, gold, answer), strict=True))
    return re.sub("|".join(map(re.escape, _PLACEHOLDERS)), lambda m: values[m[0]], prompt)


@dataclass
class Judged:
    answer: str
    correct: bool
    unlabelled: bool


class Evaluator:
    def __init__(
        self, answerer: ChatModel, judge: ChatModel, judge_prompt: str, concurrency: int = 4
    ) -> None:
        self.answerer, self.judge, self.judge_prompt = answerer, judge, judge_prompt
        self._gate = asyncio.Semaphore(concurrency)

    async def evaluate(
        self,
        *,
        speakers: tuple[str, str],
        question: str,
        gold: str,
        context: str,
        results: str,
    ) -> Judged:
        async with self._gate:
            answer = await self.answerer.complete(
                [
                    {
                        "role": "system",
                        "content": ANSWER_SYSTEM.format(speakers=" and ".join(speakers)),
                    },
                    {
                        "role": "user",
                        "content": ANSWER_USER.format(
                            context=context or "(no memory context)",
                            results=results,
                            question=question,
                        ),
                    },
                ]
            )
            prompt = fill(self.judge_prompt, question=question, gold=gold, answer=answer)
            verdict = parse_label(await self.judge.complete([{"role": "user", "content": prompt}]))
        return Judged(answer=answer, correct=bool(verdict), unlabelled=verdict is None)
