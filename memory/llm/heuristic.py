"""An offline, deterministic, rule-based stand-in for an LLM, used when no key is set. It reads
``request.task_input`` (the typed inputs of memory/prompts/), never the prompt, and says what it is
in its usage (model "heuristic-rules-v1", tokens estimated as chars/4). A fallback, not a model."""

from __future__ import annotations

import math
import re

from pydantic import BaseModel

from memory.errors import MalformedOutputError
from memory.ids import normalize_text
from memory.llm.base import LLMProvider, LLMRequest, LLMResult, Usage
from memory.llm.fact_cessation import ends_a_habit
from memory.llm.fact_decisions import decide_facts, same_fact
from memory.llm.heuristic_consolidate import consolidate
from memory.llm.heuristic_corrections import as_corrected
from memory.llm.heuristic_person import third_person
from memory.llm.heuristic_sentences import said_sentences, sentences
from memory.llm.heuristic_text import fit
from memory.prompts import (
    ConsolidateInput,
    DecideFactsInput,
    ExtractFactsInput,
    ExtractReflectionsInput,
    PromptMessage,
    SameFactInput,
)
from memory.prompts.common import MAX_TEXT_CHARS
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts
from memory.prompts.extract_reflections import (
    MAX_REFLECTIONS,
    ExtractedReflection,
    ExtractedReflections,
)
from memory.query_words import STOP_WORDS
from memory.speakers import by_person
from memory.store.rules.text import tokenize

MODEL = "heuristic-rules-v1"
_SPECIFIC = re.compile(
    r"(?i)\d|\S+@\S+\.\w+|https?://|www\.|\bmy \w+(?: \w+)? (?:is|are)\b|\bI work (?:at|for|as)\b"
    r"|\bI live in\b|\bdeadline\b|\bborn\b"
    # A retraction says what no longer holds ("I no longer have a dog", "… anymore"): dropped,
    # the stored fact it retracts would stay valid.
    r"|\bno longer\b|\banymore\b"
)
_PREFERENCE = re.compile(
    r"(?i)\b(?:prefer\w*|please|always|never|don't|do not|call me)\b"
    r"|\bI (?:really )?(?:like|love)\b"
)
# A directive to the agent ("Please always answer in Hebrew", "Never call before 10am", "I prefer
# the Lisbon office"): how to behave with its speaker, a user reflection, never a fact (which
# would be the agent's when it names no "I": a language or a weekday makes it look specific).
# Not "the client prefers invoices in EUR" nor "Always-on backups": facts about the work.
_DIRECTIVE = re.compile(
    r"(?i)^(?:please|always|never|don't|do not|call me)\s|\b(?:I|we)\s+(?:really\s+)?prefer\b"
)
# A directive joined to a statement ("My email is alice@example.com and I prefer calls after
# 10am"): the statement before it is a fact all the same; the directive is the reflections'.
_JOINED_DIRECTIVE = re.compile(r"(?i)\s*[,;]?\s+(?:and|but)\s+(?:I|we)\s+(?:really\s+)?prefer\b.*$")
_ABOUT_AGENT = re.compile(r"(?i)\b(?:your|yours|you are|you're|(?:the|our|this) project)\b")
_NAME = re.compile(r"^[A-Z][a-z]+")


def _is_specific(sentence: str) -> bool:
    names = [w for w in sentence.split()[1:] if _NAME.match(w) and w not in {"I", "I'm"}]
    return not sentence.endswith("?") and bool(_SPECIFIC.search(sentence) or names)


# Words that carry no information of their own in a chat: a sentence made of them and of stop
# words ("Wow, that's so cool!", "Thanks, that was helpful.") says nothing to remember.
_FILLER = frozenset(
    [
        "wow",
        "oh",
        "ah",
        "haha",
        "lol",
        "yeah",
        "yes",
        "yep",
        "ok",
        "okay",
        "hey",
        "hi",
        "hello",
        "thanks",
        "thank",
        "really",
        "so",
        "great",
        "awesome",
        "cool",
        "nice",
        "good",
        "amazing",
        "glad",
        "sure",
        "totally",
        "definitely",
        "super",
        "lot",
        "much",
        "also",
        "always",
        "still",
        "just",
        "even",
        "well",
        "wonderful",
        "fantastic",
        "love",
        "like",
        "get",
        "got",
        "go",
        "going",
        "know",
        "think",
        "feel",
        "felt",
    ]
)
_MIN_CONTENT_WORDS = 3


def _is_informative(sentence: str) -> bool:
    """A statement (not a question) with enough words of its own: what a person tells about
    their life ("I went to a support group for the first time", "The stories were so
    inspiring") is remembered even without a number or a name in it."""
    if sentence.endswith("?") or _PREFERENCE.search(sentence):  # a preference is a reflection
        return False
    words = [w for w in tokenize(sentence) if w not in STOP_WORDS and w not in _FILLER]
    return len(words) >= _MIN_CONTENT_WORDS


def _user_messages(messages: list[PromptMessage]) -> list[tuple[str, str | None, str, int]]:
    """(speaker, speaker id, content, number) of the messages users said (memory/speakers.py), in
    order; the number is the message's position in the window, from 1, as the prompts number them
    (what items cite)."""
    return [
        (m.name or "the user", m.user_id, m.content, n)
        for n, m in enumerate(messages, 1)
        if by_person(m)
    ]


_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|my|me|mine|myself)\b", re.IGNORECASE)
# English function words in a sentence these rules can read: two, or a fifth of its words
# ("Project Atlas launches on May 3" has one in five). "Ich wohne seit 2019 in München" has one
# in six; Spanish, French and Italian sentences have none.
_ENGLISH_WORDS, _ENGLISH_SHARE = 2, 0.2
_MIN_FACT_WORDS = 4  # "Hi Eve!" names someone and says nothing


def _without_self_introduction(sentence: str, speaker: str) -> str:
    """'I'm Alice, I work at Acme' → 'I work at Acme': the speaker's own name is no fact."""
    return re.sub(
        rf"^(?:Hi|Hello|Hey)?[^.!?]*?\bI(?:'m| am) {re.escape(speaker)}\b[,;]?\s*", "", sentence
    ).strip()


# A question the agent asks its user about themselves: "Where do you work?", "What's your salary?",
# "Were you born here?". Not a request to the agent or a question about what the user wants it to
# do ("Can you tell me when the launch is?", "Do you want me to book it?", "Are you sure?"): their
# answer is about the work, which the agent keeps for every user when it has only agent memory.
_ASKS_FOR_ACTION = re.compile(
    r"(?i)\b(?:(?:do|would|did) you (?:want|like|need|prefer) (?:me|us) to|shall (?:I|we)"
    r"|are you (?:sure|ok|okay|ready|still there)|let me know|do you mind"
    r"|do you (?:know|remember|recall|think|see|understand|agree)"
    r"|have you (?:seen|read|checked|tried|got|received))\b"
)
_ASKS_ABOUT_YOU = re.compile(
    r"(?i)\b(?:your|yours|yourself)\b|\b(?:do|did|are|were|have|had)\s+you\b"
    r"|\byou\s+(?:live|lived|work|worked|grew up|study|studied|earn|earned|come from|moved)\b"
)


def _asks_about_you(content: str) -> bool:
    return any(
        s.endswith("?") and _ASKS_ABOUT_YOU.search(s) and not _ASKS_FOR_ACTION.search(s)
        for s in sentences(content)
    )


def _answers(messages: list[PromptMessage]) -> set[int]:
    """The numbers of the messages people said in answer to the agent's question about them: every
    message by a person after it, up to the agent's next message. People answer about
    themselves without "I" or "my" ("At Initech, as a night nurse since 2019.", "Born in 1985 in
    Lyon."), which these rules would otherwise read as a statement about the work, for every
    user of the agent. Not only the first reply (review H113): in a group the one asked may
    answer second ("Bob, where do you work?" — Alice: "Ha, Bob works too much." — Bob: "At
    Initech …"), and an answer goes on over messages; what a person says there about the work is
    theirs too, the safe side. A request to the agent ("Can you tell me when the launch is?")
    asks about the work, not about its user (``_asks_about_you``)."""
    found: set[int] = set()
    asked = False
    for n, m in enumerate(messages, 1):
        if not by_person(m):
            asked = m.role == "agent" and _asks_about_you(m.content)
        elif asked:
            found.add(n)
    return found


def _readable(sentence: str) -> bool:
    """Whether the sentence is English, the only language these rules read."""
    words = [w for w in tokenize(sentence) if not w.isdigit()]
    english = sum(w in STOP_WORDS for w in words)
    return english >= _ENGLISH_WORDS or english >= _ENGLISH_SHARE * len(words) > 0


def extract_facts(p: ExtractFactsInput) -> ExtractedFacts:
    """Specific sentences of user messages. A first-person sentence, or an answer to the agent's
    question about its speaker, is about its speaker (user scope, attributed to the speaker's
    id); one about the world or the work is for every conversation (agent scope). Which of them
    are kept is the pipeline's (memory.scopes: a private detail is never the agent's)."""
    facts: dict[str, ExtractedFact] = {}
    answers = _answers(p.messages)
    for speaker, speaker_id, content, n in _user_messages(p.messages):
        for raw in said_sentences(content):
            introduced = _without_self_introduction(raw, speaker)
            sentence = as_corrected(introduced)
            sentence = _JOINED_DIRECTIVE.sub("", sentence)
            # The end of the speaker's habit ("I quit smoking", "I gave up coffee") retracts a
            # stored fact however short: dropped, the habit it ends would stay true. Not another
            # person's ("She quit her job"), whose retraction a model would have to place.
            ended = bool(_FIRST_PERSON.search(sentence)) and ends_a_habit(sentence)
            specific = _is_specific(sentence) or ended
            if (
                (len(sentence.split()) < _MIN_FACT_WORDS and not ended)
                or not (specific or _is_informative(sentence))
                or _DIRECTIVE.search(sentence)
            ):
                continue
            # Only a specific statement about the world or the work is the agent's; anything
            # else a user tells is theirs (the safe side: user memory reaches nobody else),
            # and so is a sentence in a language whose "I" and "my" these rules cannot see, and
            # an answer to the agent's question about its speaker.
            # So is what follows the speaker's own name, its subject ("I'm Hana, head of sales
            # at Initech since 2019").
            first_person = bool(_FIRST_PERSON.search(sentence))
            personal = (
                first_person
                or not specific
                or not _readable(sentence)
                or n in answers
                or introduced != raw
            )
            text = third_person(sentence, speaker)
            if personal and not first_person and speaker not in text:
                text = f"{speaker} said: {text}"  # a fact names who it is about
            text = fit(text, p.max_words)
            fact = (
                ExtractedFact(content=text, scope="user", speaker=speaker_id, sources=[n])
                if personal
                else ExtractedFact(content=text, scope="agent", speaker=None, sources=[n])
            )
            # Said again: one fact at its latest statement, citing both (a correction back to
            # what was said first comes after what it corrects).
            if (earlier := facts.pop(normalize_text(text), None)) is not None:
                fact = fact.model_copy(update={"sources": [*(earlier.sources or []), n]})
            facts[normalize_text(text)] = fact
    return ExtractedFacts(facts=list(facts.values()))


def extract_reflections(p: ExtractReflectionsInput) -> ExtractedReflections:
    max_words = p.max_words
    known = {normalize_text(fact) for fact in p.new_facts}
    for memory in p.current.values():
        lines = memory.consolidated.splitlines() + memory.recent
        known |= {normalize_text(line.strip().removeprefix("- ")) for line in lines}
    found: dict[str, list[ExtractedReflection]] = {"agent": [], "user": [], "session": []}

    def add(scope: str, text: str, n: int, speaker: str | None = None) -> None:
        # Every scope is classified; which are kept is the pipeline's (memory.scopes).
        text = fit(text, max_words)
        if normalize_text(text) not in known:
            known.add(normalize_text(text))
            found[scope].append(ExtractedReflection(content=text, speaker=speaker, sources=[n]))

    messages = _user_messages(p.messages)
    for speaker, speaker_id, content, n in messages:
        for sentence in said_sentences(content):
            rewritten = third_person(sentence, speaker)
            text = rewritten if rewritten != sentence else f"{speaker} said: {sentence}"
            # A preference, or a first-person sentence, is its speaker's, never the agent's.
            if _PREFERENCE.search(sentence) or (
                _ABOUT_AGENT.search(sentence) and _FIRST_PERSON.search(sentence)
            ):
                add("user", text, n, speaker_id)
            elif _ABOUT_AGENT.search(sentence):
                add("agent", text, n)
    if messages:
        speaker, _, content, n = messages[0]
        add("session", f"{speaker} asked: {' '.join(content.split())}", n)
    return ExtractedReflections.model_validate(
        {f"{k}_reflections": _within_bound(v, max_words) for k, v in found.items()}
    )


def _within_bound(items: list[ExtractedReflection], max_words: int) -> list[ExtractedReflection]:
    """A scope's reflections within the schema's bound where no split of the window can carry
    more: all from one message ("Please always … Please never …", nine standing instructions
    pasted at once). Over the bound, the answer is refused, and being deterministic, asked again
    it fails the same way: the message was passed over, all its reflections lost. Cutting the
    list to the bound would drop the rest unseen; instead the ones past it are said in the last
    kept one (their texts joined), in the order the user gave them, when the joined text fits
    an item (its characters, its words). When it does not, the items are returned as they are:
    the schema refuses the answer and the message is passed over, visibly, as before.
    Reflections from several messages are returned whole: over the bound, the refusal splits the
    window (a deterministic answer that reaches its bound is read as complete, so capping there
    would lose the rest unseen) and each message is read alone, folded here if it must be."""
    sources = {n for item in items for n in item.sources or ()}
    if len(items) <= MAX_REFLECTIONS or len(sources) > 1:
        return items
    kept, rest = items[: MAX_REFLECTIONS - 1], items[MAX_REFLECTIONS - 1 :]
    joined = " ".join(item.content for item in rest)
    if len(joined) > MAX_TEXT_CHARS or len(joined.split()) > max_words:
        return items
    return [*kept, rest[0].model_copy(update={"content": joined})]


def _answer(request: LLMRequest) -> BaseModel:
    match request.task_input:
        case ExtractFactsInput() as p:
            return extract_facts(p)
        case DecideFactsInput() as p:
            return decide_facts(p)
        case ExtractReflectionsInput() as p:
            return extract_reflections(p)
        case ConsolidateInput() as p:
            return consolidate(p)
        case SameFactInput() as p:
            return same_fact(p)


class HeuristicProvider(LLMProvider):
    name = "heuristic"
    deterministic = True

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        try:
            # from_attributes: another model with the same fields passes.
            value = schema.model_validate(_answer(request), from_attributes=True)
        except (TypeError, ValueError) as exc:
            # Another output than the task gives: guessing stores garbage. Its prompt was read:
            # a call, counted as a model's rejected answer is (no answer was written).
            why = f"heuristic: cannot answer {request.task} that way: {exc!r}"
            raise MalformedOutputError(
                why, provider=self.name, usage=_usage(self.name, request)
            ) from exc
        return LLMResult[M](value=value, usage=_usage(self.name, request, value.model_dump_json()))


def _usage(provider: str, request: LLMRequest, answer: str = "") -> Usage:
    chars = (len(request.system) + len(request.prompt), len(answer))
    tokens_in, tokens_out = (math.ceil(n / 4) for n in chars)
    return Usage(provider=provider, model=MODEL, input_tokens=tokens_in, output_tokens=tokens_out)
