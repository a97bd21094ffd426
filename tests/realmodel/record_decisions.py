"""Record a real model's dedup decisions on the identifier-versus-value cases.

Each case runs through the pipeline's own decision step (memory.pipeline.dedup.decide: the
project's prompt, schema, output cap and validation) with the OpenAI-compatible provider pointed
at a running server; the raw HTTP answer is kept byte for byte. One JSON object a line.

Run (a server on BASE_URL, e.g. llama.cpp's):
``.venv/bin/python -m tests.realmodel.record_decisions --base-url URL --out FILE``

With ``--locomo FILE`` (data/decide-locomo.jsonl) the prompts of that file are asked again
instead, each rebuilt from the new facts and candidates it showed (replay.shown), so the model
answers today's prompt and schema on the same LoCoMo decisions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai
from pydantic import BaseModel

from memory.deps import Deps
from memory.errors import MalformedOutputError, MnemosError
from memory.llm.base import LLMProvider, LLMRequest, LLMResult
from memory.llm.openai_provider import OpenAIProvider
from memory.pipeline import dedup
from memory.pipeline.types import CandidatesResult, NewFact
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import WordHashEmbedder
from tests.realmodel.identifier_cases import AGENT, CASES, Case, window
from tests.realmodel.replay import shown


class _Kept(LLMProvider):
    """mnemos's OpenAI-compatible provider, each call's request body and answer kept (its answers
    stream, so they are kept as the provider assembled them rather than off the wire)."""

    name = "openai_compatible"

    def __init__(self, base_url: str) -> None:
        self.sent: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []

        async def keep(request: httpx.Request) -> None:
            self.sent.append(json.loads(request.content))

        self._inner = OpenAIProvider(api_key=None, base_url=base_url)
        self._inner._client = openai.AsyncOpenAI(  # its own settings, with a recorder
            api_key="no-key",
            base_url=base_url,
            max_retries=0,
            http_client=httpx.AsyncClient(timeout=900, event_hooks={"request": [keep]}),
        )

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        try:
            result = await self._inner.generate_structured(request, schema)
        except MalformedOutputError as exc:
            # finish_reason as the step saw it: the answer was rejected (cut as a loop, or unparsable)
            self.answers.append({"content": exc.content, "finish_reason": "rejected", "usage": {}})
            raise
        usage = {
            "prompt_tokens": result.usage.input_tokens,
            "completion_tokens": result.usage.output_tokens,
        }
        self.answers.append(
            {"content": result.raw, "finish_reason": "stop", "usage": usage,
             "seconds": result.usage.seconds}
        )  # fmt: skip
        return result

    async def close(self) -> None:
        await self._inner.close()


async def _decided(
    llm: _Kept, store: SQLiteStore, facts: list[NewFact], candidates: CandidatesResult
) -> tuple[list[str] | str, float]:
    """What the pipeline's own decision step made of the model's answer, and how long it took."""
    deps = Deps(settings=Settings(), store=store, llm=llm, embedder=WordHashEmbedder())
    started = time.monotonic()
    try:
        result = await dedup.decide(deps, window(), facts, candidates)
        decided: list[str] | str = [d.event for d in result.decisions]
    except MnemosError as exc:
        decided = f"rejected: {exc}"
    await llm.close()
    if not llm.answers:
        raise SystemExit(f"no answer from the server ({decided})")
    return decided, round(time.monotonic() - started, 1)


async def record(case: Case, base_url: str, store: SQLiteStore) -> dict[str, Any]:
    llm = _Kept(base_url)
    decided, seconds = await _decided(llm, store, case.facts(), case.candidates())
    request, (first, *_) = llm.sent[0], llm.answers
    return {
        "case": case.name,
        "right": list(case.right),
        "decided": decided,
        "messages": request["messages"],
        "max_tokens": request.get("max_tokens"),
        "temperature": request.get("temperature"),
        **first,
        "seconds": seconds,
    }


async def record_locomo(
    recorded: dict[str, Any], base_url: str, store: SQLiteStore
) -> dict[str, Any]:
    """A decide-locomo.jsonl prompt asked again through today's decision step."""
    llm = _Kept(base_url)
    facts, candidates = shown(recorded["messages"][1]["content"])
    decided, seconds = await _decided(llm, store, facts, candidates)
    request, (first, *rest) = llm.sent[0], llm.answers
    return {
        "n": recorded["n"],
        "task": "decide_facts",
        "source": f"the prompt of decide-locomo.jsonl line {recorded['n']}, asked again",
        "decided": decided,
        "messages": request["messages"],
        "response_format": request.get("response_format"),
        "max_tokens": request.get("max_tokens"),
        "temperature": request.get("temperature"),
        **first,
        "then": rest,
        "seconds": seconds,
    }


async def main_locomo(base_url: str, source: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "mnemos.db")
        await store.setup()
        await store.upsert_agent(AGENT)
        done = {json.loads(x)["n"] for x in out.read_text().splitlines()} if out.exists() else set()
        with out.open("a") as f:  # resumable, as main()
            for recorded in map(json.loads, source.read_text().splitlines()):
                if recorded["n"] in done:
                    continue
                line = await record_locomo(recorded, base_url, store)
                f.write(json.dumps(line) + "\n")
                f.flush()
                print(
                    line["n"], line["decided"], line["finish_reason"], line["seconds"], flush=True
                )
        await store.close()


async def main(base_url: str, out: Path) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "mnemos.db")
        await store.setup()
        await store.upsert_agent(AGENT)
        done = (
            {json.loads(line)["case"] for line in out.read_text().splitlines()}
            if out.exists()
            else set()
        )
        with out.open("a") as f:  # a case already recorded is kept: a long run can be resumed
            for n, case in enumerate(CASES, start=1):
                if case.name in done:
                    continue
                line = {"n": n, "task": "decide_facts", "commit": commit}
                line |= await record(case, base_url, store)
                f.write(json.dumps(line) + "\n")
                f.flush()
                print(
                    n,
                    case.name,
                    line["decided"],
                    line["finish_reason"],
                    line["seconds"],
                    flush=True,
                )
        await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--base-url", required=True, help="an OpenAI-compatible /v1 URL")
    parser.add_argument("--out", type=Path, required=True, help="the JSON lines file to write")
    parser.add_argument("--locomo", type=Path, help="ask the prompts of this file again")
    args = parser.parse_args()
    if args.locomo:
        asyncio.run(main_locomo(args.base_url, args.locomo, args.out))
    else:
        asyncio.run(main(args.base_url, args.out))
