"""Memory quality on LoCoMo, end to end through the product (issue 20, docs/quality.md).

The bench starts its own Temporal dev server (free port, temporary file database) and real worker
processes (``python -m cli worker``, as ``mnemos worker``) on a SQLite store in a temporary
directory, all configured by MNEMOS_* variables, and drives them through the public
``MemoryClient`` exactly as an agent backend would:

- one agent per conversation, ``locomo-<sample_id>``;
- each LoCoMo session is recorded as two mnemos sessions, one per speaker's perspective
  (``<sample_id>-s<k>-a`` / ``-b``; mem0's LoCoMo evaluation does the same): there that speaker is
  the user (user_id = the slug of their name) and the other speaker is the agent. mnemos user
  memory belongs to the user who said it, and a session with both humans as users would be a group
  chat, where user memory is off and personal facts are dropped;
- message_id = dia_id with ':' -> '-' (D1:3 -> D1-3); created_at = the session's date (UTC) + 30 s
  per turn; a shared image is described as " [shares <caption>]";
- turn by turn ``record_messages``, ``maybe_form_memories`` after each agent turn, then
  ``on_session_end``; sessions in time order, conversations side by side (``--parallel``).

It waits until every workflow is closed (Temporal visibility), then asks each non-adversarial
question (category != 5) as the agent would in a later session, in the view of the user it is
about: ``search_facts`` (k = 10, default settings) and the memory context of a new session. A
question naming both speakers, or neither, is asked in both views and the two ranked lists are
interleaved to 10. Figures, overall and per category (1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop): evidence_recall_at_10 (evidence turns among the source messages of the top 10
facts), answer_token_recall (the gold answer's content words in the top 10 facts' text), context
tokens per query, facts / LLM calls / LLM tokens per 100 messages, failed and degraded workflow
runs, and in the same run the raw-turn store of bench/locomo.py and the whole conversation's size.
With --answer-model and --judge-model: answers from the memory and an LLM-judge J score.

    .venv/bin/python bench/quality.py --data PATH/locomo-dev.json [--conversations 1]

The last line is one JSON object. A malformed data file exits with code 2 and says what and where.
LoCoMo is CC BY-NC: it is read from its path, never copied into the project.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pydantic import ValidationError  # noqa: E402

from bench.locomo_quality.data import Conversation, DataError, load  # noqa: E402
from bench.locomo_quality.judge import (  # noqa: E402
    ChatModel,
    DiskCache,
    Evaluator,
    Judged,
    JudgePromptError,
    endpoint,
    load_judge_prompt,
)
from bench.locomo_quality.model_cache import RecordingProxy  # noqa: E402
from bench.locomo_quality.report import RunFacts, figures, table  # noqa: E402
from bench.locomo_quality.run import (  # noqa: E402
    Asked,
    ask_all,
    count_facts,
    raw_turn_baseline,
    record_all,
)
from bench.locomo_quality.stack import StackError, running_stack  # noqa: E402
from memory.logging import configure_logging  # noqa: E402

PROVIDERS = ("heuristic", "openai", "gemini", "openai-compatible", "auto")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data", type=Path, required=True, help="a file in LoCoMo's JSON format")
    p.add_argument("--conversations", type=int, help="the first N conversations (default all)")
    p.add_argument(
        "--sample", action="append", help="only this sample_id (repeatable; e.g. conv-30)"
    )
    p.add_argument("--sessions", type=int, help="the first N sessions of each (quick runs)")
    p.add_argument(
        "--provider",
        choices=PROVIDERS,
        default="heuristic",
        help="LLM provider of the workers (openai-compatible: MNEMOS_MODELS__BASE_URL)",
    )
    p.add_argument(
        "--triggers",
        choices=("turn", "session-end"),
        default="turn",
        help="form after each agent turn (hot triggers) or at session end only (one window per "
        "session, the same on every run: what --model-cache needs to resume)",
    )
    p.add_argument("--workers", type=int, default=2, help="worker processes")
    p.add_argument("--parallel", type=int, default=4, help="conversations recorded at once")
    p.add_argument(
        "--wait-timeout", type=float, default=900, help="seconds to wait for the workflows"
    )
    p.add_argument("--answer-model", help="answer each question with this model")
    p.add_argument("--judge-model", help="judge the answers with this model (J)")
    p.add_argument("--eval-base-url", help="their OpenAI-compatible endpoint (OPENAI_BASE_URL)")
    p.add_argument(
        "--eval-api-key",
        help="its key (else MNEMOS_BENCH_EVAL_API_KEY or OPENAI_API_KEY; prefer the environment)",
    )
    p.add_argument("--eval-concurrency", type=int, default=4)
    p.add_argument("--judge-prompt", type=Path, help="a judge prompt file (e.g. mem0's own text)")
    p.add_argument(
        "--cache", type=Path, default=Path(".data/quality-cache"), help="answer/judge cache"
    )
    p.add_argument("--details", type=Path, help="write one JSON line per question here")
    p.add_argument(
        "--model-cache",
        type=Path,
        help="keep the workers' model answers here (openai-compatible): a re-run resumes",
    )
    p.add_argument(
        "--replay",
        action="store_true",
        help="answer the workers only from --model-cache (no model server: offline tests)",
    )
    args = p.parse_args(argv)
    if args.replay and not args.model_cache:
        p.error("--replay replays a --model-cache")
    if args.model_cache and args.provider != "openai-compatible":
        p.error("--model-cache records an openai-compatible server's answers")
    if bool(args.answer_model) != bool(args.judge_model):
        p.error("--answer-model and --judge-model go together")
    for name in ("conversations", "sessions", "workers", "parallel", "eval_concurrency"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def evaluator(args: argparse.Namespace) -> Evaluator | None:
    if not args.answer_model:
        return None
    client = endpoint(args.eval_base_url, args.eval_api_key)
    cache = DiskCache(args.cache)
    return Evaluator(
        ChatModel(args.answer_model, client, cache, {"temperature": 0.0}),
        ChatModel(
            args.judge_model,
            client,
            cache,
            {"temperature": 0.0, "response_format": {"type": "json_object"}},
        ),
        load_judge_prompt(args.judge_prompt),
        concurrency=args.eval_concurrency,
    )


async def judge_all(
    ev: Evaluator, conversations: list[Conversation], asked: list[Asked]
) -> list[Judged]:
    speakers = {c.sample_id: c.speakers for c in conversations}
    return list(
        await asyncio.gather(
            *(
                ev.evaluate(
                    speakers=speakers[a.sample_id],
                    question=a.question.text,
                    gold=a.question.answer,
                    context=a.context,
                    results=a.results,
                )
                for a in asked
            )
        )
    )


def write_details(path: Path, asked: list[Asked], judged: list[Judged] | None) -> None:
    with path.open("w", encoding="utf-8") as out:
        for n, a in enumerate(asked):
            row: dict[str, Any] = {
                "sample_id": a.sample_id,
                "question": a.question.text,
                "answer": a.question.answer,
                "category": a.question.category,
                "evidence": sorted(a.question.evidence),
                "views": a.views,
                "evidence_recall_at_10": a.evidence_recall,
                "answer_token_recall": a.answer_token_recall,
                "context_tokens": a.context_tokens,
                "facts": [
                    {"content": h.content, "scope": h.scope, "sources": s}
                    for h, s in zip(a.hits, a.sources, strict=True)
                ],
            }
            if judged is not None:
                row |= {"generated": judged[n].answer, "correct": judged[n].correct}
            out.write(json.dumps(row) + "\n")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    conversations = load(
        args.data, conversations=args.conversations, sessions=args.sessions, samples=args.sample
    )
    ev = evaluator(args)
    configure_logging("warning")  # the client's logs; the workers log to files in the temp dir
    with (
        contextlib.ExitStack() as recording,
        tempfile.TemporaryDirectory(prefix="mnemos-quality-") as tmp,
    ):
        proxy = None
        if args.model_cache:
            upstream = None if args.replay else os.environ.get("MNEMOS_MODELS__BASE_URL")
            if not (upstream or args.replay):
                raise StackError("--model-cache needs MNEMOS_MODELS__BASE_URL (the model server)")
            proxy = recording.enter_context(RecordingProxy(upstream, args.model_cache))
            recording.enter_context(
                mock.patch.dict(os.environ, {"MNEMOS_MODELS__BASE_URL": proxy.base_url})
            )
        async with running_stack(Path(tmp), provider=args.provider, workers=args.workers) as stack:
            memory = stack.client
            print(
                f"recording {sum(len(c.turns) for c in conversations)} turns of "
                f"{len(conversations)} conversation(s) through {args.workers} worker(s)",
                flush=True,
            )
            recorded = await stack.watching(
                record_all(memory, conversations, args.parallel, hot=args.triggers == "turn")
            )
            await stack.wait_closed(args.wait_timeout)
            formed = time.perf_counter() - started
            stats = await stack.workflow_stats()
            facts = sum([await count_facts(memory, c) for c in conversations])
            asked = await ask_all(memory, conversations)
            baseline = await raw_turn_baseline(memory.embedder, conversations)
            embedder = memory.embedder.model
    judged = await judge_all(ev, conversations, asked) if ev is not None else None
    if args.details:
        write_details(args.details, asked, judged)
    facts_of_run = RunFacts(
        data=args.data.name,
        provider=stack.settings.models.provider,
        embedder=embedder,
        conversations=conversations,
        mnemos_sessions=recorded,
        facts=facts,
        stats=stats,
        formation_seconds=formed,
        wall_seconds=time.perf_counter() - started,
        answer_model=args.answer_model,
        judge_model=args.judge_model,
        eval_requests=(ev.answerer.requests + ev.judge.requests) if ev else 0,
        eval_cached=(ev.answerer.cached + ev.judge.cached) if ev else 0,
        extra={"triggers": args.triggers}
        | (
            {
                "model_answers_replayed": proxy.store.hits,
                "model_answers_asked": proxy.store.misses,
                "model_answers_missing": len(proxy.store.missing),
                "model_answers_cut": len(proxy.store.cut),
                "model_requests_abandoned": proxy.store.abandoned,
            }
            if proxy is not None
            else {}
        ),
    )
    out = figures(facts_of_run, asked, baseline, judged)
    for problem in stats.failed + stats.degraded:
        print(f"  not clean: {problem}", file=sys.stderr)
    for key in proxy.store.missing if proxy is not None else []:
        print(f"  no recorded answer: request {key}", file=sys.stderr)
    return out


async def _stoppable[T](work: Coroutine[Any, Any, T]) -> T:
    """``work``, cancelled by SIGTERM: its stack then stops the dev server and the workers it
    started. Ended by the signal's default action instead, they outlived this process, and the
    workers went on forming, calling the model server, for a run nobody would read."""
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    return await work


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        out = asyncio.run(_stoppable(run(args)))
    except asyncio.CancelledError:
        print("error: terminated; the workers and the dev server were stopped", file=sys.stderr)
        return 128 + signal.SIGTERM
    except (DataError, JudgePromptError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ValidationError as e:  # MNEMOS_* variables the settings refuse
        print(f"error: invalid settings: {e}", file=sys.stderr)
        return 2
    except StackError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(table(out))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
