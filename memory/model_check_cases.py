"""Fixed cases with known right answers, for `mnemos check-model`: the qualification a user runs
before trusting a model with memory formation.

Each case renders the step's real prompt and schema (memory/prompts) and checks the answer the
way the pipeline does (``dedup.resolve`` for decisions), then compares it with the right one:

- decide_facts: a fact stated again in other words is NONE, a correction is an UPDATE of the
  fact it corrects (not of its neighbour), a different fact next to a similar one is an ADD;
- extract_facts: a relative date ("yesterday") ends as the absolute date (the model's, or the
  pipeline's rule in memory/dates.py on what the model kept), and a personal
  fact is user scope while a fact about the shared world is agent scope;
- consolidate: three reflections of a user merged into a blob the pipeline accepts (items, the
  word limit) that keeps each of them. So the step is exercised whatever the transcripts' own
  reflections give: a model whose reflections are all dropped still has its consolidation
  judged, rather than failed as never called.

It also asks the server whether it enforces a JSON schema (llama.cpp, vLLM and Ollama do; an
older server may ignore ``response_format`` and answer free JSON).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel

from memory.dates import resolve_relative_dates
from memory.errors import InvalidModelOutputError, MalformedOutputError, ProviderError
from memory.llm import Purpose, choose_model
from memory.llm.base import LLMProvider, LLMRequest, Retry
from memory.model_check_record import Recorder
from memory.models import AgentConfig
from memory.pipeline.consolidation import checked_blob
from memory.pipeline.dedup import resolve
from memory.pipeline.restatements import second_look
from memory.pipeline.types import Decision, NewFact, SimilarFact
from memory.prompts import (
    ConsolidateInput,
    DecideFactsInput,
    ExtractFactsInput,
    PromptMessage,
    TaskInput,
)
from memory.prompts.consolidate import ConsolidatedSections
from memory.prompts.decide_facts import ExistingFactShown, FactDecisions, NewFactShown
from memory.prompts.extract_facts import ExtractedFacts
from memory.settings import Settings


@dataclass(frozen=True)
class CaseResult:
    name: str
    step: str
    expected: str
    got: str
    passed: bool
    model: str = ""  # the model that answered it
    tier: int = 0  # the agents' tier that chose that model


@dataclass(frozen=True)
class DecideCase:
    name: str
    new: str
    existing: tuple[str, ...]
    event: str
    existing_index: int | None


DECIDE_CASES = (
    DecideCase(
        "duplicate",
        "Alice was born on March 3.",
        ("Alice works at the city library.", "Alice's birthday is on March 3."),
        "NONE",
        1,
    ),
    DecideCase(
        "correction",
        "The Mars Festival budget is now $70,000.",
        ("The Mars Festival takes place in Lisbon.", "The Mars Festival budget is $50,000."),
        "UPDATE",
        1,
    ),
    DecideCase(
        "new fact",
        "Sam has a cat named Luna.",
        ("Sam has a dog named Max.",),
        "ADD",
        None,
    ),
)

AGENT = AgentConfig(agent_id="case-agent", name="Max", persona="A clinic's front-desk assistant.")
_SAID_AT = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
# "Yesterday" on 2026-03-10: any way of writing March 9, 2026.
_MARCH_9 = re.compile(r"2026-03-09|march\s+9(?!\d)|9(?:th)?\s+march|03/09/2026", re.IGNORECASE)


def _message(seq: int, content: str) -> PromptMessage:
    return PromptMessage(
        seq=seq, role="user", name="Sam", content=content, created_at=_SAID_AT, user_id="sam"
    )


async def _ask[M: BaseModel](
    llm: LLMProvider,
    settings: Settings,
    task_input: TaskInput,
    purpose: Purpose,
    schema: type[M],
    check: Callable[[M], object],
    attempts: int,
    tier: int,
) -> object | None:
    """The checked answer, retried as the pipeline retries (hotter, saying why); None when no
    attempt was usable."""
    rejected: str | None = None
    for n in range(1, attempts + 1):
        request = LLMRequest.of(
            task_input,
            model=choose_model(settings, llm.name, purpose, tier),
            temperature=settings.models.temperature,
            retry=Retry(attempt=n, rejected=rejected),
        )
        try:
            result = await llm.generate_structured(request, schema)
            checked = check(result.value)
        except (InvalidModelOutputError, MalformedOutputError) as e:
            rejected = str(e)[:300]
            continue
        if isinstance(llm, Recorder) and llm.calls:
            llm.calls[-1].valid = True
        return checked
    return None


async def decide_case(
    llm: LLMProvider, settings: Settings, case: DecideCase, attempts: int, tier: int = 0
) -> CaseResult:
    new = NewFact(index=0, content=case.new, scope="user")
    existing = [
        SimilarFact(fact_id=f"case-{i}", content=text, version=1, similarity=0.8)
        for i, text in enumerate(case.existing)
    ]
    offered = {0: set(range(len(existing)))}
    task = DecideFactsInput(
        new_facts=[NewFactShown(index=0, content=case.new, scope="user")],
        existing=[
            ExistingFactShown(index=i, content=text, candidate_for=(0,))
            for i, text in enumerate(case.existing)
        ],
        max_words=settings.facts.max_words,
    )

    def check(answer: FactDecisions) -> Decision:
        [decision] = resolve(
            answer.decisions, [new], existing, offered, max_words=settings.facts.max_words
        )
        return decision

    got = await _ask(llm, settings, task, "fast", FactDecisions, check, attempts, tier)
    if isinstance(got, Decision):  # as formation takes it: a kept restatement is looked at again
        model = choose_model(settings, llm.name, "fast", tier)
        before = len(llm.calls) if isinstance(llm, Recorder) else 0
        [got], again = await second_look(llm, model, [got], [new], {0: existing})
        if isinstance(llm, Recorder):
            for made in llm.calls[before:][: len(again)]:
                made.valid = True
    said = _said(got, existing) if isinstance(got, Decision) else "no valid answer"
    expected = case.event + (
        f" of {case.existing_index}" if case.existing_index is not None else ""
    )
    return CaseResult(case.name, "decide_facts", expected, said, said == expected)


def _said(decision: Decision, existing: list[SimilarFact]) -> str:
    ids = [e.fact_id for e in existing]
    target = ids.index(decision.existing_id) if decision.existing_id else None
    return decision.event + (f" of {target}" if target is not None else "")


async def relative_date_case(
    llm: LLMProvider, settings: Settings, attempts: int, tier: int = 0
) -> CaseResult:
    task = ExtractFactsInput(
        agent=AGENT,
        messages=[_message(1, "I started my new job at Siemens yesterday.")],
        max_words=settings.facts.max_words,
    )

    def check(answer: ExtractedFacts) -> str:
        job = [f.content for f in answer.facts if "siemens" in f.content.lower()]
        # As formation stores it: a relative date the model left is resolved by rule (dates.py).
        return resolve_relative_dates(job[0], _SAID_AT) if job else "(no fact about the job)"

    got = await _ask(llm, settings, task, "fast", ExtractedFacts, check, attempts, tier)
    text = str(got or "no valid answer")
    return CaseResult(
        "relative date", "extract_facts", "the job fact says 2026-03-09", text,
        bool(_MARCH_9.search(text)),
    )  # fmt: skip


async def scope_case(
    llm: LLMProvider, settings: Settings, attempts: int, tier: int = 0
) -> CaseResult:
    task = ExtractFactsInput(
        agent=AGENT,
        messages=[
            _message(1, "I'm allergic to penicillin."),
            _message(2, "By the way, the clinic's front desk opens at 8:00 on weekdays."),
        ],
        max_words=settings.facts.max_words,
    )

    def check(answer: ExtractedFacts) -> str:
        def scope(word: str) -> str:
            found = [f.scope for f in answer.facts if word in f.content.lower()]
            return found[0] if found else "missing"

        return f"penicillin: {scope('penicillin')}, front desk: {scope('8:00')}"

    got = await _ask(llm, settings, task, "fast", ExtractedFacts, check, attempts, tier)
    expected = "penicillin: user, front desk: agent"
    return CaseResult(
        "user vs agent scope", "extract_facts", expected, str(got or "no valid answer"),
        got == expected,
    )  # fmt: skip


# A user's reflections as formation buffers them, and a word each that the blob must keep.
_REFLECTIONS = (
    ("Sam prefers short answers in bullet points.", "bullet"),
    ("Sam is vegetarian and asks for recipes without meat.", "vegetarian"),
    ("Sam works night shifts and reads messages after 18:00.", "night"),
)


async def consolidation_case(
    llm: LLMProvider, settings: Settings, attempts: int, tier: int = 0
) -> CaseResult:
    cfg = settings.reflections
    task = ConsolidateInput(
        agent=AGENT,
        scope="user",
        current_content="",
        current_version=0,
        reflections=[text for text, _ in _REFLECTIONS],
        word_limit=cfg.word_limit("user"),
    )

    def check(answer: ConsolidatedSections) -> str:
        blob = checked_blob(
            answer,
            next_version=task.next_version,
            word_limit=task.word_limit,
            tolerance=cfg.word_limit_tolerance,
            merged=task.reflections,  # as the pipeline checks it: an echo of the prompt fails
        ).lower()
        kept = [word for _, word in _REFLECTIONS if word in blob]
        return "keeps " + (", ".join(kept) if kept else "none of them")

    got = await _ask(
        llm, settings, task, "consolidation", ConsolidatedSections, check, attempts, tier
    )
    expected = "keeps " + ", ".join(word for _, word in _REFLECTIONS)
    return CaseResult(
        "consolidation", "consolidate", expected, str(got or "no valid answer"), got == expected
    )


async def run_cases(
    llm: LLMProvider,
    settings: Settings,
    attempts: int = 3,
    tier: int = 0,
    models: frozenset[str] | None = None,
) -> list[CaseResult]:
    """The cases, as asked for an agent of ``tier``; with ``models``, only those whose model is
    one of them (a higher tier's run asks only the models no lower tier asked)."""
    Run = Callable[[], Awaitable[CaseResult]]
    cases: list[tuple[str, Purpose, Run]] = [
        *[
            (f"case {c.name}", "fast", lambda c=c: decide_case(llm, settings, c, attempts, tier))
            for c in DECIDE_CASES
        ],
        ("case relative date", "fast", lambda: relative_date_case(llm, settings, attempts, tier)),
        ("case scope", "fast", lambda: scope_case(llm, settings, attempts, tier)),
        (
            "case consolidation",
            "consolidation",
            lambda: consolidation_case(llm, settings, attempts, tier),
        ),
    ]
    results = []
    for what, purpose, run in cases:
        model = choose_model(settings, llm.name, purpose, tier)
        if models is not None and model not in models:
            continue
        if isinstance(llm, Recorder):
            llm.what = what
        results.append(replace(await run(), model=model, tier=tier))
    return results


class SchemaProbe(BaseModel):
    """Asked for while the prompt asks for other JSON: only an enforced schema yields it."""

    colour: Literal["red", "green"]


Support = Literal["json_schema", "json_object", "native", "none"]


async def probe_structured(llm: LLMProvider, settings: Settings) -> tuple[Support, str]:
    """Whether the server enforces a JSON schema: it is asked for JSON the schema forbids."""
    inner = llm.inner if isinstance(llm, Recorder) else llm
    from memory.llm.openai_provider import OpenAIProvider

    if not isinstance(inner, OpenAIProvider) or inner.name != "openai_compatible":
        return "native", f"{inner.name}: the provider's own structured output"
    request = LLMRequest(
        task_input=ExtractFactsInput(agent=AGENT, messages=[], max_words=5),
        model=choose_model(settings, inner.name, "fast", 0),
        system="You answer with JSON.",
        prompt='Answer with exactly this JSON object and nothing else: {"answer": "yes"}',
        max_output_tokens=32,
    )
    saved = inner.options
    inner.options = replace(saved, structured_output="json_schema")
    try:
        await inner.generate_structured(request, SchemaProbe)
    except MalformedOutputError:
        return "json_object", "the server ignores json_schema (its answer broke the schema)"
    except ProviderError as e:
        if e.retryable:
            raise
        return "json_object", f"the server refuses json_schema ({str(e)[:120]})"
    finally:
        inner.options = saved
    return "json_schema", "the server enforces json_schema"
