"""LoCoMo's JSON format, read and checked, and mapped onto what a backend sends mnemos.

A malformed file raises ``DataError`` naming the file, the sample and the key at fault; odd but
legal content (an evidence entry that names no turn, as a few of LoCoMo's do: ``"D"``,
``"D:11:26"``) is kept out of the scoring and counted, not fatal.

Mapping (one place; docs/quality.md explains why):
- one agent per conversation, ``locomo-<sample_id>``;
- each LoCoMo session is recorded as two mnemos sessions, one per speaker's perspective
  (``<sample_id>-s<k>-a`` and ``-b``): there that speaker is role "user" (user_id = the slug of
  their name, name = their name) and the other speaker is role "agent" (name = their name). A
  session with both humans as users would be a group chat, where user memory is off;
- message_id = the dia_id with ':' replaced by '-' (ids may not hold ':'), e.g. D1:3 -> D1-3;
- created_at = the session's ``session_<k>_date_time`` (UTC) + 30 s per turn;
- a shared image is described in the text as " [shares <blip_caption>]", as bench/locomo.py does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from memory.models import MessageIn

ADVERSARIAL = 5
CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop"}
TURN_SPACING = timedelta(seconds=30)
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_DIA_ID = re.compile(r"D(\d+):(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)")

Side = Literal["a", "b"]


class DataError(ValueError):
    """The data file is not in LoCoMo's format; the message says what and where."""


@dataclass(frozen=True)
class Turn:
    dia_id: str  # canonical "D<session>:<turn>"
    speaker: str
    text: str  # with " [shares <caption>]" for a shared image


@dataclass(frozen=True)
class Session:
    number: int
    started_at: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    category: int
    evidence: frozenset[str]  # dia_ids of existing turns


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]  # speaker_a, speaker_b
    sessions: list[Session]
    questions: list[Question] = field(default_factory=list)
    unscorable_questions: int = 0  # non-adversarial, but its evidence names no turn of the file
    unasked_questions: int = 0  # its evidence lies in sessions left out (--sessions)

    @property
    def agent_id(self) -> str:
        return f"locomo-{self.sample_id}"

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]

    @property
    def asked_at(self) -> datetime:
        """When its questions are asked: a day after its last session began (LoCoMo asks after the
        conversation). Ages in the memory ("said 8 May 2023, 2d ago") count from then, not from
        the day the bench runs, so a question's context is the same on every run."""
        return self.sessions[-1].started_at + timedelta(days=1)


def slug(name: str) -> str:
    """A speaker's user_id: 'Caroline' -> 'caroline' (letters, digits, '-' and '.' kept)."""
    text = re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-.")
    if not text:
        raise DataError(f"speaker name {name!r} gives no usable user id")
    return text[:128]


def message_id(dia_id: str) -> str:
    """D1:3 -> D1-3 (mnemos ids may not hold ':')."""
    return dia_id.replace(":", "-")


def dia_id_of(message_id: str) -> str:
    """D1-3 -> D1:3, the inverse of ``message_id``."""
    session, _, turn = message_id.partition("-")
    return f"{session}:{turn}"


def session_id(sample_id: str, number: int, side: Side) -> str:
    return f"{sample_id}-s{number}-{side}"


def dia_ids(text: str) -> list[str]:
    """Canonical 'D<session>:<turn>' ids; a few evidence entries list several ('D8:6; D9:17')."""
    return [f"D{int(s)}:{int(t)}" for s, t in _DIA_ID.findall(text)]


def messages_for(conv: Conversation, session: Session, side: Side) -> list[MessageIn]:
    """The session as seen by one speaker: they are the user, the other speaker is the agent."""
    me = conv.speakers[0 if side == "a" else 1]
    out = []
    for i, turn in enumerate(session.turns):
        mine = turn.speaker == me
        out.append(
            MessageIn(
                message_id=message_id(turn.dia_id),
                role="user" if mine else "agent",
                content=turn.text,
                created_at=session.started_at + i * TURN_SPACING,
                user_id=slug(turn.speaker) if mine else None,
                name=turn.speaker,
            )
        )
    return out


# ---------------------------------------------------------------- reading and checking


def _need(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise DataError(f"{where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise DataError(f"{where}: {key!r} is {type(value).__name__}, not the expected type")
    return value


def _date(text: Any, where: str) -> datetime:
    try:
        return datetime.strptime(str(text), DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise DataError(f"{where}: {text!r} is not a date like '1:56 pm on 8 May, 2023'") from None


def _turn(raw: Any, speakers: tuple[str, str], where: str) -> Turn:
    dia = _need(raw, "dia_id", str, where)
    if not _DIA_ID.fullmatch(dia.strip()):
        raise DataError(f"{where}: dia_id {dia!r} is not like 'D1:3'")
    where = f"{where} ({dia})"
    speaker = _need(raw, "speaker", str, where)
    if speaker not in speakers:
        raise DataError(
            f"{where}: speaker {speaker!r} is neither {speakers[0]!r} nor {speakers[1]!r}"
        )
    text = _need(raw, "text", str, where).strip()
    if caption := raw.get("blip_caption"):
        text = f"{text} [shares {caption}]".strip()
    if not text:
        raise DataError(f"{where}: empty text")
    return Turn(dia_id=dia_ids(dia)[0], speaker=speaker, text=text)


def _sessions(conv: dict[str, Any], speakers: tuple[str, str], where: str) -> list[Session]:
    sessions = []
    seen: set[str] = set()
    for key, value in conv.items():
        match = _SESSION_KEY.fullmatch(key)
        if match is None or not value:  # "session_N_date_time", or an empty session
            continue
        if not isinstance(value, list):
            raise DataError(f"{where}.{key}: a session is a list of turns")
        number = int(match[1])
        started = _date(_need(conv, f"{key}_date_time", str, where), f"{where}.{key}_date_time")
        turns = tuple(_turn(t, speakers, f"{where}.{key}[{i}]") for i, t in enumerate(value))
        for turn in turns:
            if turn.dia_id in seen:
                raise DataError(f"{where}.{key}: dia_id {turn.dia_id} appears twice")
            seen.add(turn.dia_id)
        sessions.append(Session(number=number, started_at=started, turns=turns))
    if not sessions:
        raise DataError(f"{where}: no sessions (keys 'session_<k>' holding turns)")
    return sorted(sessions, key=lambda s: (s.started_at, s.number))  # in time order


def _questions(conv: Conversation, qa: list[Any], existing: set[str], where: str) -> None:
    """The scorable questions: evidence naming at least one turn of the file, all of them
    recorded (``--sessions`` may leave some out: then the question is not asked)."""
    recorded = {t.dia_id for t in conv.turns}
    for i, raw in enumerate(qa):
        at = f"{where}.qa[{i}]"
        category = _need(raw, "category", int, at)
        if category == ADVERSARIAL:
            continue
        if category not in CATEGORIES:
            raise DataError(f"{at}: category {category} is not 1-5")
        text = _need(raw, "question", str, at)
        answer = _need(raw, "answer", (str, int, float), at)
        evidence = _need(raw, "evidence", list, at)
        found = frozenset(d for item in evidence for d in dia_ids(str(item)) if d in existing)
        if not found:  # its evidence names no turn at all: recall cannot be scored
            conv.unscorable_questions += 1
            continue
        if not found <= recorded:
            conv.unasked_questions += 1
            continue
        conv.questions.append(
            Question(text=text, answer=str(answer), category=category, evidence=found)
        )


def load(
    path: Path,
    *,
    conversations: int | None = None,
    sessions: int | None = None,
    samples: list[str] | None = None,
) -> list[Conversation]:
    """The first ``conversations`` samples (or those whose sample_id is in ``samples``), each cut
    to its first ``sessions`` sessions in time order (a question with evidence beyond them is not
    asked). DataError on a malformed file or an unknown sample_id."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: not JSON: {e}") from None
    if not isinstance(raw, list) or not raw:
        raise DataError(f"{path}: expected a non-empty JSON list of LoCoMo samples")
    if samples:
        ids = [s.get("sample_id") if isinstance(s, dict) else None for s in raw]
        if unknown := [s for s in samples if s not in ids]:
            raise DataError(f"{path}: no sample_id {', '.join(map(repr, unknown))}")
        raw = [s for s in raw if s.get("sample_id") in samples]
    out = []
    for n, sample in enumerate(raw[:conversations]):
        where = f"{path.name}[{n}]"
        sample_id = _need(sample, "sample_id", str, where)
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,100}", sample_id):
            raise DataError(f"{where}: sample_id {sample_id!r} has characters ids may not hold")
        where = f"{path.name}[{n}] ({sample_id})"
        body = _need(sample, "conversation", dict, where)
        speakers = (
            _need(body, "speaker_a", str, f"{where}.conversation"),
            _need(body, "speaker_b", str, f"{where}.conversation"),
        )
        if slug(speakers[0]) == slug(speakers[1]):
            raise DataError(f"{where}: both speakers are named {speakers[0]!r}")
        found = _sessions(body, speakers, f"{where}.conversation")
        conv = Conversation(sample_id=sample_id, speakers=speakers, sessions=found[:sessions])
        existing = {t.dia_id for s in found for t in s.turns}
        _questions(conv, _need(sample, "qa", list, where), existing, where)
        out.append(conv)
    return out
