"""The verb a word is a form of, as the offline reader knows verbs (memory/llm/decision_words.py)."""

from __future__ import annotations

from memory.llm.decision_words import BARE_VERBS, IRREGULAR, MANY_VALUES, ONE_VALUE


def verb_lemma(token: str) -> str | None:
    """The verb a token is a form of, when it is one the rules know (else None)."""
    if token in IRREGULAR:
        return IRREGULAR[token]
    known = ONE_VALUE | MANY_VALUES
    if token in BARE_VERBS or token in {"born", "due"}:
        return token
    for suffix in ("s", "es", "ies", "ed", "ied", "ing"):
        if not token.endswith(suffix):
            continue
        stem = token[: -len(suffix)]
        # "lives" "live", "watches" "watch", "studies" "study", "moved" "move", "shipped" "ship"
        for lemma in (stem, stem + "e", stem + "y", stem[:-1]):
            if lemma in known and (lemma != stem[:-1] or stem[-1:] == stem[-2:-1]):
                return lemma
    return None
