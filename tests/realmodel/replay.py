"""Real answers of a real small model (../shared/data/real-model/, see its README), served back
through the fake OpenAI-compatible server with their content and finish_reason as recorded."""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memory.deps import Deps
from memory.errors import MnemosError
from memory.llm.openai_provider import OpenAIProvider
from memory.pipeline import dedup
from memory.pipeline.types import CandidatesResult, DecisionsResult, NewFact, SimilarFact
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore
from tests.fake_provider_server import FakeProviderServer, Received, Reply, openai_chat
from tests.fakes import WordHashEmbedder
from tests.realmodel.identifier_cases import AGENT, window

_ITEM = re.compile(r"^(\d+)\. (.*)$")
FILE = "qwen2.5-coder-1.5b-q4km.jsonl"
ENV = "MNEMOS_REAL_MODEL_DATA"  # a directory holding FILE, when ../shared is elsewhere


def find_data() -> Path | None:
    """$MNEMOS_REAL_MODEL_DATA, else shared/data/real-model next to the repo or one of its parents
    (a worktree sits a level deeper than the main checkout)."""
    if env := os.environ.get(ENV):
        path = Path(env) / FILE
        return path if path.is_file() else None
    repo = Path(__file__).resolve().parents[2]
    for parent in repo.parents:
        path = parent / "shared" / "data" / "real-model" / FILE
        if path.is_file():
            return path
    return None


@dataclass(frozen=True)
class Recorded:
    n: int
    task: str
    what: str
    finish_reason: str
    content: str
    prompt_tokens: int
    completion_tokens: int

    def reply(self) -> Reply:
        return openai_chat(
            self.content,
            model="qwen2.5-coder-1.5b-q4km",
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            finish_reason=self.finish_reason,
        )


def load_recorded(path: Path) -> list[Recorded]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [
        Recorded(
            n=d["n"],
            task=d["task"],
            what=d["what"],
            finish_reason=d["finish_reason"],
            content=d["content"],
            prompt_tokens=d["usage"]["prompt_tokens"],
            completion_tokens=d["usage"]["completion_tokens"],
        )
        for d in lines
    ]


@pytest.fixture(scope="session")
def recorded() -> list[Recorded]:
    path = find_data()
    if path is None:
        pytest.skip(f"real-model answers not found: set {ENV} or put ../shared next to the repo")
    return load_recorded(path)


# Answers of today's prompts, recorded by `mnemos check-model --record` against the real model
# (bench/local_model.py serve) and committed: tests replay them with no model and no ../shared.
CHECKED = Path(__file__).resolve().parent / "data" / "qwen2.5-coder-1.5b-instruct-q4_k_m.jsonl"


@pytest.fixture(scope="session")
def checked() -> list[Recorded]:
    return load_recorded(CHECKED)


# The schema name the OpenAI SDK sends for each task (answers recorded before consolidation
# answered JSON have no schema: those were consolidations too).
_SCHEMAS = {
    "ExtractedFacts": "extract_facts",
    "FactDecisions": "decide_facts",
    "ExtractedReflections": "extract_reflections",
    "ConsolidatedSections": "consolidate",
    "SameFact": "same_fact",
}


def _schema_name(request: Received) -> str:
    body: Any = request.body or {}
    schema = (body.get("response_format") or {}).get("json_schema") or {}
    return str(schema.get("name", ""))


def task_of(request: Received) -> str:
    return _SCHEMAS.get(_schema_name(request), "consolidate")


class Replayer:
    """A responder: each request gets the next recorded answer of its task, in recording order,
    round and round (a retry gets the next one, as a model sampling hotter would answer anew)."""

    def __init__(self, answers: list[Recorded]) -> None:
        self._cycles: dict[str, Iterator[Recorded]] = {}
        for task in {a.task for a in answers}:
            self._cycles[task] = itertools.cycle([a for a in answers if a.task == task])
        self.served: list[Recorded] = []

    def __call__(self, request: Received) -> Reply:
        if _schema_name(request) == "SchemaProbe":
            # check-model's question whether the server enforces a schema: as llama.cpp does.
            return openai_chat('{"colour": "red"}')
        answer = next(self._cycles[task_of(request)])
        self.served.append(answer)
        return answer.reply()


async def decide_replayed(
    line: dict[str, Any], facts: list[NewFact], candidates: CandidatesResult, tmp_path: Path
) -> tuple[DecisionsResult | MnemosError, list[Received]]:
    """A recorded decide answer (``content``, ``usage``, ``finish_reason``; ``then``, the answers
    to the step's further calls, its second looks) served back through the
    fake OpenAI-compatible server into the pipeline's own decision step on a fresh SQLite store:
    its result (or the error that rejects the answer: the step would be retried) and the requests
    the model got (none when the rules decided everything)."""
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    await store.upsert_agent(AGENT)
    with FakeProviderServer() as server:
        server.script(
            *(
                openai_chat(
                    answer["content"],
                    model="qwen2.5-coder-1.5b-q4km",
                    prompt_tokens=answer["usage"]["prompt_tokens"],
                    completion_tokens=answer["usage"]["completion_tokens"],
                    finish_reason=answer["finish_reason"],
                )
                for answer in [line, *line.get("then", [])]
            )
        )
        llm = OpenAIProvider(api_key=None, base_url=server.openai_base_url)
        deps = Deps(settings=Settings(), store=store, llm=llm, embedder=WordHashEmbedder())
        try:
            outcome: DecisionsResult | MnemosError = await dedup.decide(
                deps, window(), facts, candidates
            )
        except MnemosError as exc:
            outcome = exc
        finally:
            await deps.close()
        return outcome, server.requests


def block(prompt: str, tag: str) -> str:
    return prompt.split(f"<{tag}>")[1].split(f"</{tag}>")[0]


def shown(prompt: str) -> tuple[list[NewFact], CandidatesResult]:
    """The new facts and each one's candidates, as the recorded prompt showed them."""
    new = [
        NewFact(index=int(m[1]), content=m[2], scope="user")
        for m in map(_ITEM.match, block(prompt, "new_facts").strip().splitlines())
        if m
    ]
    stored = {
        int(m[1]): SimilarFact(fact_id=f"stored-{m[1]}", content=m[2], version=1, similarity=0.8)
        for m in map(_ITEM.match, block(prompt, "existing_memories").strip().splitlines())
        if m
    }
    by_new: dict[int, list[SimilarFact]] = {}
    for line in block(prompt, "candidates").strip().splitlines():
        head, _, listed = line.partition(": existing ")
        by_new[int(head.removeprefix("new fact "))] = [stored[int(i)] for i in listed.split(", ")]
    return new, CandidatesResult(by_new_index=by_new)
