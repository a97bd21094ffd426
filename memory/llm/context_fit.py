"""What fits a model's context: the prompt, then the answer's cap.

A local model has a small context (8,192 tokens is common for a 1.5B model on a CPU), and a
server given a prompt plus ``max_tokens`` beyond it either refuses or cuts the answer where the
context ends. With ``models.context_tokens`` set, the answer's cap is what the step's schema
allows or what the context leaves after the prompt, whichever is less. An extraction step whose
prompt leaves too little room for an answer raises WindowTooLargeError, which splits the window
(the same path as an answer that overflows its bound), as a consolidation's splits its buffer;
nothing is sent that cannot fit.

Tokens are estimated from characters at 3 per token: below English's usual 4, so the estimate
errs towards a larger prompt (a tokenizer would be exact, and a dependency per model family).
A script written without spaces between words (Chinese, Japanese, Korean, Thai, Lao, Khmer,
Burmese) is tokenized about one token per character: each of its characters counts one. A server
that refuses a request all the same (its tokenizer counts more) says so, and the step splits or
falls back as it would here (memory/llm/errors.py ContextExceededError).
"""

from __future__ import annotations

import math

from memory.errors import WindowTooLargeError
from memory.llm.base import LLMRequest
from memory.word_count import SPACELESS_RUN

CHARS_PER_TOKEN = 3.0
# Characters of the scripts written without spaces count about a token each (CHARS_PER_TOKEN, 3
# and more to a token, would count Chinese text at a third of what a tokenizer does); which they
# are is memory/word_count.py's, where a word limit counts each as a word.
TEMPLATE_TOKENS = 32  # the chat template's role markers around system and user
MARGIN_TOKENS = 64
# The least room an extraction's or a consolidation's answer needs: its JSON envelope and a few
# items.
MIN_ANSWER_TOKENS = 256
# The steps whose input the workflow can split (a window's messages, a buffer's reflections).
SPLIT_TASKS = frozenset({"extract_facts", "extract_reflections", "consolidate"})


def text_tokens(text: str) -> float:
    """About how many tokens ``text`` is: a token a character of a script without spaces, one per
    CHARS_PER_TOKEN of the rest."""
    dense = sum(len(run) for run in SPACELESS_RUN.findall(text))
    return dense + (len(text) - dense) / CHARS_PER_TOKEN


def prompt_tokens(request: LLMRequest) -> int:
    return math.ceil(text_tokens(request.system) + text_tokens(request.prompt)) + TEMPLATE_TOKENS


def output_cap(request: LLMRequest, context_tokens: int | None) -> int:
    """``request.max_output_tokens``, lowered to what ``context_tokens`` leaves after the prompt."""
    if context_tokens is None:
        return request.max_output_tokens
    room = context_tokens - prompt_tokens(request) - MARGIN_TOKENS
    if room >= request.max_output_tokens:
        return request.max_output_tokens
    if request.task in SPLIT_TASKS and room < MIN_ANSWER_TOKENS:
        raise WindowTooLargeError(
            f"{request.task}: a prompt of about {prompt_tokens(request)} tokens leaves {room} of "
            f"the model's {context_tokens} for the answer: its input is split"
        )
    return max(room, MARGIN_TOKENS)
