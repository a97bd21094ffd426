"""Logs are JSON lines with the ids bound, and never carry a secret."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from temporalio.testing import WorkflowEnvironment

from memory.llm.openai_provider import OpenAIProvider
from memory.logging import configure_logging, get_logger
from memory.models import MessageIn
from tests.fake_provider_server import FakeProviderServer, openai_chat
from tests.harness import T0, Harness


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """Put logging back after the test: a logger left writing to the test's closed capture stream
    would break every later test."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        structlog.reset_defaults()
        root.handlers[:] = handlers
        root.setLevel(level)


@pytest.mark.usefixtures("restored_logging")
def test_json_lines_with_ids_and_no_secrets(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info")  # here, so that it writes to this test's captured stderr
    get_logger(agent_id="eve", session_id="s1").info(
        "connected",
        api_key="sk-live-123",
        mongodb_uri="mongodb+srv://admin:hunter2@cluster0.example.net/mnemos",
        note="see mongodb://bob:pw@db.local:27017",
        input_tokens=42,
    )
    line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert (line["event"], line["agent_id"], line["session_id"], line["level"]) == (
        "connected",
        "eve",
        "s1",
        "info",
    )
    assert line["api_key"] == "[redacted]" and line["mongodb_uri"] == "[redacted]"
    assert "pw@" not in line["note"] and "[redacted]@db.local" in line["note"]
    assert line["input_tokens"] == 42  # a count is not a secret
    assert "sk-live-123" not in json.dumps(line) and "hunter2" not in json.dumps(line)


def _lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().err.strip().splitlines()]


@pytest.mark.usefixtures("restored_logging")
def test_an_exceptions_text_is_redacted_in_our_logs_and_the_libraries(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A driver's error quotes the DSN it was given: the traceback logged with it must not."""
    configure_logging("info")
    try:
        raise ConnectionError('no server: "host=db user=mnemos password=S3cretPW"')
    except ConnectionError as e:
        get_logger(agent_id="eve").error("request failed", exc_info=e)
        logging.getLogger("temporalio.activity").warning(
            "Completing activity as failed", exc_info=True
        )
    try:
        raise ValueError("cannot parse postgresql//mnemos:Hunter2@db/mnemos")
    except ValueError:
        logging.getLogger("some.library").exception("bad dsn")

    ours, sdks, library = _lines(capsys)
    for line in (ours, sdks, library):
        assert "Traceback" in str(line["exception"]), line  # the traceback itself is kept
        assert "S3cretPW" not in json.dumps(line) and "Hunter2" not in json.dumps(line)
    assert "password=[redacted]" in str(sdks["exception"])
    assert "postgresql//[redacted]@db/mnemos" in str(library["exception"])


@pytest.mark.usefixtures("restored_logging")
def test_a_library_records_extra_fields_are_the_lines_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The workflows log through the SDK's stdlib logger with extra=: those fields (the step, the
    reason, the run's ids) must reach the line, or the log says only that something fell back."""
    configure_logging("info")
    logging.getLogger("temporalio.workflow").warning(
        "model output unusable after retries: fallback taken",
        extra={"step": "extract_facts", "temporal_workflow": {"workflow_id": "form:eve:s1"}},
    )
    (line,) = _lines(capsys)
    assert line["step"] == "extract_facts"
    assert line["temporal_workflow"] == {"workflow_id": "form:eve:s1"}


@pytest.mark.usefixtures("restored_logging")
async def test_an_answer_that_does_not_fit_logs_where_not_what_the_user_said(
    time_env: WorkflowEnvironment, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A weak model writes a fact as a bare string: pydantic's message quotes it, and the worker
    logs the failure at the default level, in lines no forget can reach (review H129)."""
    configure_logging("info")  # the default MNEMOS_LOG_LEVEL
    h = await Harness.create(time_env, tmp_path)
    with FakeProviderServer() as server:
        bad = openai_chat(json.dumps({"facts": ["Bea was diagnosed with LEAKDIAG, PIN 4471"]}))
        server.script(*[bad] * 20)
        provider = OpenAIProvider(api_key="sk-test-0123456789", base_url=server.openai_base_url)
        h.llm = provider  # type: ignore[assignment]  # a real SDK for the Harness's fake
        told = "I was diagnosed with LEAKDIAG last week; my bank PIN is 4471."
        await h.record("s1", [MessageIn(message_id="m1", role="user", user_id="bea", content=told, created_at=T0)])  # fmt: skip
        async with h.worker():
            summary = await h.form("s1")
        await provider.close()
    await h.store.close()
    logged = capsys.readouterr().err
    assert summary.degraded and "does not fit the schema: facts.0: Input should be" in logged
    assert "LEAKDIAG" not in logged
