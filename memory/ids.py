"""Deterministic ids and content hashes: the basis of idempotent writes under retry and replay."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import datetime

from memory.fact_words import fold_but_codes

_SPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Case, Unicode form and whitespace folded, trailing punctuation dropped: 'exact duplicate'
    means this. A code keeps its letter case (memory/fact_words.py ``is_code``: a token holding a
    digit or mixing cases, "Tr0ub4dor", "QX7Bz"): two passwords in another case are two values."""
    folded = fold_but_codes(unicodedata.normalize("NFKC", text))
    return _SPACE.sub(" ", folded).strip().rstrip(".!;")


def content_hash(text: str) -> str:
    """Hash of the normalised text (the fact dedup key: one valid fact per agent, user, scope and
    hash; the store looks a new or changed text up by it, never recomputes a stored one).

    Codes keep their case here; before they did, every letter was folded. A text without a
    code (most facts: no letter beside a digit in one word, no "iPhone") hashes as it always did.
    One with a code in capitals, stored before, keeps its old hash, and a new hash of its very
    text differs. What that changes, and why it is safe:

    - its exact restatement is NONE by the same-text rule before any model
      (memory/pipeline/predecide.py), which compares words, not hashes; where no decision is made
      (a fallback adding a batch undecided) it may be stored a second time: a duplicate line,
      never a loss, and never a duplicate key (the two hashes differ);
    - a text that differs from it only in a code's case ("Tr0ub4dor" / "tr0ub4dor") is an UPDATE
      of it by rule (predecide ``CODE_CASE``): the store rewrites that fact whatever its hash, so
      the new code is kept even where its new hash equals the old one's folded key;
    - the store finds duplicates by looking the new text's hash up, so no two valid facts share a
      hash and no unique index is ever violated; erasure, import and re-form only compare hashes
      for the same purpose and at worst miss an old duplicate (keep a line, re-embed a text)."""
    return hashlib.sha256(normalize_text(text).encode()).hexdigest()


def text_hash(text: str) -> str:
    """Hash of the exact text (the embedding cache key: the model sees the exact text)."""
    return hashlib.sha256(text.encode()).hexdigest()


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:24]


def formation_id(
    session_id: str,
    agent_id: str,
    after_seq: int,
    upto_seq: int,
    session_created: datetime | None = None,
) -> str:
    """One formation = one agent's pass over one message range of one session.

    ``session_created`` tells the session's incarnations apart: a session erased whole (forget)
    and recorded again under its id restarts its seqs, and its windows must not take the ids of
    the facts and reflections the first one left (agent scope outlives a user's erasure): the
    same fact id would then be "already used", a reflection id "already stored". Without it, the
    id of a window formed before incarnations were told apart (kept for reading old records)."""
    base = f"{agent_id}:{session_id}:{after_seq + 1}-{upto_seq}"
    if session_created is None:
        return base
    return f"{base}~{_digest('session', session_created.isoformat())[:8]}"


def formed_in(formation: str | None, session_id: str, session_created: datetime) -> bool | None:
    """Whether the formation (its id) read this incarnation of the session: exact, by the
    digest ``formation_id`` gave it. None when the id cannot tell: none, another session's, or
    named before incarnations were (ids have no ":" or "~" of their own: model_types.Id)."""
    if not formation:
        return None
    base, named, _ = formation.partition("~")
    parts = base.split(":")
    if not named or len(parts) != 3 or parts[1] != session_id:
        return None
    return incarnation(formation) == _digest("session", session_created.isoformat())[:8]


def incarnation(formation: str | None) -> str | None:
    """The session incarnation a formation id names (its digest; a re-form's id, "…~digest:reform:n",
    names its original's), or None for an id named before incarnations were."""
    if not formation or "~" not in formation:
        return None
    return formation.partition("~")[2].split(":", 1)[0]


def fact_id(formation: str, index: int) -> str:
    return "f_" + _digest("fact", formation, index)


def reflection_id(formation: str, scope: str, index: int) -> str:
    return "r_" + _digest("reflection", formation, scope, index)
