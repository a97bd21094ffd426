"""Steps 2–3: extract facts (fast model) and keep those the window says; step 4, the similar facts
they are decided against, is memory/pipeline/candidates.py (named here for the steps calling it)."""

from __future__ import annotations

import asyncio
from functools import partial

from memory import transcript
from memory.dates import resolve_relative_dates
from memory.deps import Deps
from memory.errors import (
    InputRefusedError,
    MalformedOutputError,
    ProviderError,
    WindowTooLargeError,
)
from memory.ids import content_hash
from memory.llm import choose_model
from memory.llm.base import FIRST, LLMRequest, LLMResult, Retry
from memory.models import StoredMessage
from memory.pipeline import pieces, rereads
from memory.pipeline.candidates import dedup_gate, find_candidates
from memory.pipeline.echoes import echoes_instructions
from memory.pipeline.pieces import read_halving
from memory.pipeline.slices import merge_facts
from memory.pipeline.sources import any_cited, cited
from memory.pipeline.types import (
    ExtractedFactsResult,
    LlmCall,
    NewFact,
    Window,
)
from memory.pipeline.usage import llm_call
from memory.pipeline.window import answer_is_full, window_agent, window_messages
from memory.prompts.common import MAX_ITEMS, PromptMessage
from memory.prompts.extract_facts import (
    INSTRUCTIONS,
    ExtractedFact,
    ExtractedFacts,
    ExtractFactsInput,
)
from memory.scopes import as_owned, place_fact, sole_speaker

_NONE = ExtractedFactsResult(facts=[])


async def extract_facts(
    deps: Deps,
    window: Window,
    retry: Retry = FIRST,
    part: int | None = None,
    *,
    halving: bool = True,
    step_seconds: float | None = None,
) -> ExtractedFactsResult:
    """The window's new facts. A window of one message is read in pieces (memory/pipeline/
    pieces.py): every slice, each halved while its answer cannot carry it, at most
    pieces.MAX_DENSE_FACTS distinct facts kept, as FormMemories reads it since DENSE_MESSAGES.
    ``part``, or without ``halving`` (the extract_facts activity, every slice's first read in
    FormMemories): one slice of its one oversized message, or every slice in turn, each answer
    kept and the whole capped (memory/pipeline/slices.py). ``step_seconds``: the timeout the
    step runs under, when it runs as one (the second looks end well within it); else the
    worker's setting."""
    if not window.fact_scopes:
        return _NONE
    messages = await window_messages(deps, window)
    if not messages:
        # Nothing left to read (a forget deleted the messages, or withheld them from this
        # agent): no model call, which could only answer from its instructions.
        return _NONE
    max_chars, rule = deps.settings.formation.max_chars_per_run, window.slice_cut
    count = transcript.slice_count(messages, max_chars, rule=rule)
    if part is None and halving and window.message_count == 1:
        content = messages[0].content
        leaves: list[ExtractedFactsResult] = []
        for n in range(count):
            leaves += await read_halving(
                partial(extract_piece, deps, window, retry, n),
                partial(pieces.can_halve, content, max_chars, n, rule=rule),
            )
        return pieces.merged(leaves)
    if part is None and count > 1:
        return merge_facts(
            [
                await _extract(deps, window, messages, retry, n, count, step_seconds)
                for n in range(count)
            ]
        )
    if part is not None and part >= count:  # none such (the budget changed since the load)
        return _NONE
    return await _extract(deps, window, messages, retry, part, count, step_seconds)


async def extract_piece(
    deps: Deps, window: Window, retry: Retry, part: int, halves: pieces.Halves = ()
) -> ExtractedFactsResult:
    """The facts of one piece of the window's one message (memory/pipeline/pieces.py: slice
    ``part``, halved as ``halves`` says), every distinct one its answer holds, up to
    ``facts.max_per_formation``, the rest counted as dropped: whether the answer is full
    (pieces.full), and its halves are read instead, the caller judges, as of a first read."""
    if not window.fact_scopes:
        return _NONE
    return await read_piece(deps, window, await window_messages(deps, window), retry, part, halves)


async def read_piece(
    deps: Deps,
    window: Window,
    messages: list[StoredMessage],
    retry: Retry,
    part: int,
    halves: pieces.Halves = (),
) -> ExtractedFactsResult:
    """``extract_piece`` of the window's ``messages`` as already loaded (window_messages): the
    extract_piece_facts activity judges its halving on the same read."""
    if not window.fact_scopes:
        return _NONE
    if len(messages) != 1:  # its message is no longer the agent's to form: nothing to read
        return _NONE
    content, max_chars = messages[0].content, deps.settings.formation.max_chars_per_run
    shown = pieces.text(content, max_chars, part, halves, rule=window.slice_cut)
    if not shown:  # none such (the budget changed since the workflow named it)
        return _NONE
    prompt = [m.model_copy(update={"content": shown}) for m in transcript.prompt_messages(messages)]
    request, result = await _ask(deps, window, prompt, retry)
    kept = _kept(deps, window, messages, result.value.facts, None)
    kept = kept[: deps.settings.facts.max_per_formation]  # as a first read keeps them
    return ExtractedFactsResult(
        facts=kept,
        llm=[llm_call(request, result.usage)],
        dropped=len(result.value.facts) - len(kept),
    )


async def piece_halvable(deps: Deps, window: Window, part: int, halves: pieces.Halves = ()) -> bool:
    """Whether that piece of the window's one message can be read in halves (pieces.py)."""
    return halvable(deps, window, await window_messages(deps, window), part, halves)


def halvable(
    deps: Deps,
    window: Window,
    messages: list[StoredMessage],
    part: int,
    halves: pieces.Halves = (),
) -> bool:
    """``piece_halvable`` judged on the window's ``messages`` as already loaded: never when it
    holds not exactly one (its message forgotten, or withheld from the agent, since)."""
    max_chars = deps.settings.formation.max_chars_per_run
    return len(messages) == 1 and pieces.can_halve(
        messages[0].content, max_chars, part, halves, rule=window.slice_cut
    )


async def _ask(
    deps: Deps, window: Window, messages: list[PromptMessage], retry: Retry
) -> tuple[LLMRequest, LLMResult[ExtractedFacts]]:
    agent = await window_agent(deps, window)
    request = LLMRequest.of(
        ExtractFactsInput(agent=agent, messages=messages, max_words=deps.settings.facts.max_words),
        model=choose_model(deps.settings, deps.llm.name, "fast", agent.tier),
        temperature=deps.settings.models.temperature,
        retry=retry,
    )
    return request, await deps.llm.generate_structured(request, ExtractedFacts)


async def _extract(
    deps: Deps,
    window: Window,
    messages: list[StoredMessage],
    retry: Retry,
    part: int | None,
    count: int,
    step_seconds: float | None = None,
) -> ExtractedFactsResult:
    cfg = deps.settings.facts
    sliced = part if count > 1 else None
    shown = transcript.prompt_messages(
        messages, deps.settings.formation.max_chars_per_run, sliced, rule=window.slice_cut
    )
    started = asyncio.get_running_loop().time()
    request, result = await _ask(deps, window, shown, retry)
    bound = min(MAX_ITEMS, cfg.max_per_formation)
    # A slice is one message's, as a window of one is: its full answer is kept (slices.py).
    full = answer_is_full(deps, len(result.value.facts), bound)
    if window.message_count > 1 and sliced is None and full:
        raise WindowTooLargeError(
            f"extract_facts answered {len(result.value.facts)} facts for {window.message_count} "
            f"messages, its bound is {bound}: the window is split"
        )
    kept = _kept(deps, window, messages, result.value.facts, cfg.max_per_formation)
    dropped = len(result.value.facts) - len(kept)
    calls = [llm_call(request, result.usage)]
    over_bound = 0
    if sliced is None and not deps.llm.deterministic:
        kept, looks, unkept, over_bound = await _read_again(
            deps, window, messages, retry, kept, result.value.facts, started, step_seconds
        )
        calls += looks
        dropped += unkept
    return ExtractedFactsResult(
        facts=kept,
        llm=calls,
        dropped=dropped,
        max_facts=cfg.max_per_formation if sliced is not None else None,
        over_bound=over_bound,
    )


async def _read_again(
    deps: Deps,
    window: Window,
    messages: list[StoredMessage],
    retry: Retry,
    kept: list[NewFact],
    answer: list[ExtractedFact],
    started: float,
    step_seconds: float | None = None,
) -> tuple[list[NewFact], list[LlmCall], int, int]:
    """(``kept`` with what the messages the window's ``answer`` passed over say, each read
    alone (memory/pipeline/rereads.py); the calls made; how many of their facts were not kept;
    how many of those were new texts left out past the window's bound, a loss the run counts).

    A second look whose answer is unusable or refused finds nothing, and a provider failing on
    one ends them: the window's own answer stands, never failed by it. Nor by the step's
    timeout, which covers every call of it (workflows/options.py; timed out, the step would ask
    the window again, and again): the second looks end by half of it from the window's call
    (``started``, the loop's clock), and one is begun only while a call as long as the longest
    so far still fits. The timeout is the step's own (``step_seconds``): the workflow's input
    sets it, and a worker's setting may say otherwise."""
    cfg = deps.settings.facts
    clock = asyncio.get_running_loop().time
    deadline = started + (step_seconds or deps.settings.retries.llm_timeout_seconds) / 2
    longest, answered = clock() - started, 0
    calls: list[LlmCall] = []
    again: list[tuple[StoredMessage, list[NewFact]]] = []
    said = [transcript.as_said(f.content) for f in answer]
    for message in rereads.passed_over(messages, kept, cfg.reread_messages, said):
        begun = clock()
        if begun + longest > deadline:
            break
        shown = transcript.prompt_messages([message], deps.settings.formation.max_chars_per_run)
        try:
            async with asyncio.timeout_at(deadline):
                request, result = await _ask(deps, window, shown, retry)
        except (MalformedOutputError, InputRefusedError):
            continue
        except (ProviderError, TimeoutError):
            # Unreachable or out of time: the second looks end, the window's answer stands
            # (raised, a retry of the step would ask the window again).
            break
        longest = max(longest, clock() - begun)
        calls.append(llm_call(request, result.usage))
        answered += len(result.value.facts)
        # Cited from the message it was shown; placed by the window's rules (its users' names).
        found = _kept(deps, window, messages, result.value.facts, None, shown=[message])
        again.append((message, found))
    if not again:
        return kept, calls, answered, 0
    out = rereads.merged(kept, again, messages, cfg.max_per_formation)
    distinct = {content_hash(f.content) for f in kept} | {
        content_hash(f.content) for _, found in again for f in found
    }
    return out, calls, answered - (len(out) - len(kept)), len(distinct) - len(out)


def _kept(
    deps: Deps,
    window: Window,
    messages: list[StoredMessage],
    extracted: list[ExtractedFact],
    limit: int | None,
    *,
    shown: list[StoredMessage] | None = None,
) -> list[NewFact]:
    """The answer's facts that are stored: placed in a scope the window may write, cited from
    its messages, not the prompt's words, each text once; at most ``limit`` (None: all).
    ``shown``: the messages the answer was given when not all of the window's (a second look at
    one, read alone): cited from them, its speaker theirs; the rules that keep a user's content
    out of agent memory still read the whole window (the users it names: memory/scopes.py)."""
    kept: list[NewFact] = []
    seen: set[str] = set()
    shown = shown or messages
    only = sole_speaker(shown, window.user_id)
    said = [m.content for m in shown]
    for fact in extracted:
        text = transcript.as_said(fact.content)
        owned, speaker = as_owned(fact.scope, fact.speaker or only, text, messages)
        scope = place_fact(owned, speaker, window.user_id, window.fact_scopes)
        # No word-limit filter: the limit is the prompt's ask. A fact that says more is still
        # what was said (the schema bounds its characters); dropped, it would be lost unseen.
        if (
            not text
            or scope is None
            or (limit is not None and len(kept) >= limit)
            or echoes_instructions(text, any_cited(fact.sources, shown), INSTRUCTIONS, said)
        ):
            continue
        source = cited(fact.sources, shown, text, speaker if scope == "user" else None)
        if source is None:  # nothing in the window says it: not stored
            continue
        # "Yesterday" means the day before it was said, whoever extracted it (memory/dates.py).
        text = resolve_relative_dates(text, source.dates_from)
        key = content_hash(text)
        new = NewFact(
            index=len(kept),
            content=text,
            scope=scope,
            source_message_ids=source.message_ids,
            said_at=source.said_at,
        )
        if key in seen:
            # Said again in the window ("I live in Berlin. … I live in Paris. … Sorry, I live in
            # Berlin."): one fact, said at its latest statement, citing all of them, so that the
            # order things were said in puts it after what it corrects back (h202).
            earlier = next(k for k in kept if content_hash(k.content) == key)
            kept.remove(earlier)
            new = _said_again(earlier, new)
        seen.add(key)
        kept.append(new)
    return [k.model_copy(update={"index": i}) for i, k in enumerate(kept)]


def _said_again(earlier: NewFact, later: NewFact) -> NewFact:
    """One fact of two statements of its text: the first's words and scope, the sources of
    both, said at the latest."""
    ids = tuple(dict.fromkeys((*earlier.source_message_ids, *later.source_message_ids)))
    times = [t for t in (earlier.said_at, later.said_at) if t is not None]
    return earlier.model_copy(
        update={"source_message_ids": ids, "said_at": max(times) if times else None}
    )


__all__ = ["dedup_gate", "extract_facts", "find_candidates"]
