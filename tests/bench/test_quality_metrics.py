"""bench/quality.py's rules on a tiny hand-made conversation whose right answers are known: the
LoCoMo -> mnemos mapping, routing, interleaving, the two recalls; malformed data files; and the
answer/judge cache (a re-run asks the endpoint nothing)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bench.locomo_quality.data import (
    DataError,
    dia_id_of,
    load,
    message_id,
    messages_for,
    session_id,
)
from bench.locomo_quality.judge import (
    ChatModel,
    DiskCache,
    Evaluator,
    endpoint,
    load_judge_prompt,
    parse_label,
)
from bench.locomo_quality.metrics import (
    answer_token_recall,
    by_category,
    content_words,
    evidence_recall,
    interleave,
    route,
)
from bench.quality import main
from tests.fake_provider_server import FakeProviderServer, Received, Reply, openai_chat

TINY = Path(__file__).parent / "fixtures" / "tiny_locomo.json"


# ---------------------------------------------------------------- mapping


def test_tiny_conversation_loads_with_its_scorable_questions() -> None:
    [conv] = load(TINY)
    assert conv.agent_id == "locomo-tiny-1"
    assert conv.speakers == ("Ana", "Ben")
    assert [s.number for s in conv.sessions] == [1, 2]
    # The adversarial question is never asked; the one whose evidence names no turn is counted.
    assert [q.text for q in conv.questions] == [
        "Where does Ana live?",
        "What is the name of Ben's dog?",
        "How much did Ben pay for his new running shoes?",
        "Which cities do Ana's sister and Ben's marathon take them to?",
    ]
    assert conv.unscorable_questions == 1
    assert conv.questions[3].evidence == {"D2:1", "D1:4"}


def test_each_speaker_is_the_user_of_their_own_perspective() -> None:
    [conv] = load(TINY)
    second = conv.sessions[1]
    as_ben = messages_for(conv, second, "b")
    assert session_id(conv.sample_id, second.number, "b") == "tiny-1-s2-b"
    assert [(m.message_id, m.role, m.user_id, m.name) for m in as_ben] == [
        ("D2-1", "agent", None, "Ana"),
        ("D2-2", "user", "ben", "Ben"),
        ("D2-3", "agent", None, "Ana"),
        ("D2-4", "user", "ben", "Ben"),
    ]
    as_ana = messages_for(conv, second, "a")
    assert [m.role for m in as_ana] == ["user", "agent", "user", "agent"]
    # The session's own date, 30 s per turn; a shared photo is described in the text.
    assert as_ben[0].created_at == datetime(2024, 3, 20, 16, 30, tzinfo=UTC)
    assert as_ben[3].created_at == datetime(2024, 3, 20, 16, 31, 30, tzinfo=UTC)
    assert as_ben[3].content.endswith("[shares a photo of a beagle asleep on a sofa]")


def test_message_ids_map_back_to_dia_ids() -> None:
    assert message_id("D12:3") == "D12-3"
    assert dia_id_of("D12-3") == "D12:3"


def test_sessions_option_keeps_the_questions_it_can_answer() -> None:
    [conv] = load(TINY, sessions=1)
    assert [s.number for s in conv.sessions] == [1]
    # Only the questions whose evidence lies wholly in session 1 are asked.
    assert [q.text for q in conv.questions] == [
        "Where does Ana live?",
        "What is the name of Ben's dog?",
    ]
    assert (conv.unasked_questions, conv.unscorable_questions) == (2, 1)


# ---------------------------------------------------------------- routing and scoring


@pytest.mark.parametrize(
    ("question", "views"),
    [
        ("Where does Ana live?", [0]),
        ("What is the name of Ben's dog?", [1]),  # possessive
        ("where does ANA live?", [0]),  # case
        ("Which cities do Ana's sister and Ben's marathon take them to?", [0, 1]),
        ("Who adopted a beagle?", [0, 1]),  # neither
        ("What did Banana say?", [0, 1]),  # a name inside a word is no mention
    ],
)
def test_a_question_is_asked_in_the_view_of_the_speaker_it_names(
    question: str, views: list[int]
) -> None:
    assert route(question, ("Ana", "Ben")) == views


def test_two_views_interleave_to_k_without_duplicates() -> None:
    ana = ["a1", "shared", "a2", "a3"]
    ben = ["b1", "b2", "shared", "b3"]
    assert interleave([ana, ben], 5, key=str) == ["a1", "b1", "shared", "b2", "a2"]
    assert interleave([ana, ben], 10, key=str) == ["a1", "b1", "shared", "b2", "a2", "a3", "b3"]
    assert interleave([ana], 2, key=str) == ["a1", "shared"]


def test_evidence_recall_is_the_share_of_evidence_turns_found() -> None:
    evidence = frozenset({"D2:1", "D1:4"})
    assert evidence_recall(evidence, ["D1:4", "D1:1"]) == 0.5
    assert evidence_recall(evidence, ["D1:4", "D2:1", "D1:4"]) == 1.0
    assert evidence_recall(evidence, []) == 0.0


def test_answer_token_recall_counts_content_words_only() -> None:
    assert content_words("The Berlin and the Porto") == ["berlin", "porto"]
    facts = ["Ana's sister Clara is visiting from Berlin next week."]
    assert answer_token_recall("Berlin and Porto", facts) == 0.5
    assert answer_token_recall("120 euros", ["Ben bought new ones for 120 euros."]) == 1.0
    assert answer_token_recall("Lisbon", ["Ana lives in Lisbonia"]) == 0.0  # whole words
    assert answer_token_recall("the", ["anything"]) is None  # nothing to score


def test_category_means_leave_unscored_questions_out() -> None:
    rows = [(4, 1.0), (4, 0.0), (1, None), (2, 0.5)]
    assert by_category(rows) == {
        "overall": 0.5,
        "multi_hop": None,
        "temporal": 0.5,
        "open_domain": None,
        "single_hop": 0.5,
    }


# ---------------------------------------------------------------- malformed data


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "data.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _tiny_with(change: Any) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(TINY.read_text())
    change(data[0])
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "not JSON"),
        ({"sample_id": "x"}, "a non-empty JSON list"),
        (_tiny_with(lambda s: s.pop("qa")), "[0] (tiny-1): missing key 'qa'"),
        (
            _tiny_with(lambda s: s["conversation"]["session_1"][2].update(dia_id="D1-3")),
            "session_1[2]: dia_id 'D1-3' is not like 'D1:3'",
        ),
        (
            _tiny_with(lambda s: s["conversation"].update(session_2_date_time="20/03/2024")),
            "session_2_date_time: '20/03/2024' is not a date",
        ),
        (
            _tiny_with(lambda s: s["conversation"]["session_2"][0].update(speaker="Clara")),
            "session_2[0] (D2:1): speaker 'Clara' is neither 'Ana' nor 'Ben'",
        ),
        (
            _tiny_with(lambda s: s["conversation"]["session_1"][0].pop("text")),
            "session_1[0] (D1:1): missing key 'text'",
        ),
    ],
)
def test_a_malformed_file_is_refused_with_what_and_where(
    tmp_path: Path, data: Any, message: str
) -> None:
    with pytest.raises(DataError) as raised:
        load(_write(tmp_path, data))
    assert message in str(raised.value)


def test_the_bench_exits_with_code_2_on_a_malformed_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "[1, 2")
    assert main(["--data", str(path)]) == 2
    assert f"error: {path}: not JSON" in capsys.readouterr().err
    assert main(["--data", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


# ---------------------------------------------------------------- answers, judge, cache


def _scripted(received: Received) -> Reply:
    """The answer model says "Lisbon"; the judge (asked for JSON) says CORRECT to that."""
    if "response_format" in received.body:
        return openai_chat('{"label": "CORRECT"}')
    return openai_chat("Lisbon")


async def _evaluate(server: FakeProviderServer, cache: Path) -> tuple[Evaluator, bool]:
    client = endpoint(server.openai_base_url, "sk-test")
    disk = DiskCache(cache)
    ev = Evaluator(
        ChatModel("answer-model", client, disk, {"temperature": 0.0}),
        ChatModel("judge-model", client, disk, {"response_format": {"type": "json_object"}}),
        load_judge_prompt(None),
    )
    judged = await ev.evaluate(
        speakers=("Ana", "Ben"),
        question="Where does Ana live?",
        gold="Lisbon",
        context="<MemoryContext/>",
        results="- [user] Ana lives in Lisbon (1 year ago)",
    )
    return ev, judged.correct


async def test_a_rerun_is_answered_from_the_cache(tmp_path: Path) -> None:
    with FakeProviderServer() as server:
        server.script(_scripted, _scripted)
        first, correct = await _evaluate(server, tmp_path / "cache")
        assert correct
        assert (first.answerer.requests, first.judge.requests) == (1, 1)
        judge_request = server.requests[1].body
        assert "Gold answer: Lisbon" in judge_request["messages"][0]["content"]
        assert "Generated answer: Lisbon" in judge_request["messages"][0]["content"]

        again, correct_again = await _evaluate(server, tmp_path / "cache")
        assert correct_again
        assert len(server.requests) == 2  # the endpoint heard nothing new
        assert (again.answerer.cached, again.judge.cached) == (1, 1)


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ('{"label": "CORRECT"}', True),
        ('The answer names the same city. {"label": "WRONG"}', False),
        ("It matches. CORRECT", True),
        ("CORRECT or WRONG, hard to say", None),
        ("no idea", None),
    ],
)
def test_judge_replies_are_read_strictly(reply: str, label: bool | None) -> None:
    assert parse_label(reply) is label


def test_a_judge_prompt_file_must_hold_the_placeholders(tmp_path: Path) -> None:
    prompt = tmp_path / "judge.txt"
    prompt.write_text("Question: {question}\nGold: {gold_answer}\n")
    with pytest.raises(ValueError, match="generated_answer"):
        load_judge_prompt(prompt)
