"""Traces: an HTTP request that triggers a formation is one connected trace, from the request's
span through the workflow into each activity and its LLM, embedding and store spans, and no span
attribute carries what was said (message, fact or reflection text, a search query)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic import BaseModel
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from memory.errors import MalformedOutputError, ProviderError
from memory.llm.base import LLMProvider, LLMRequest, LLMResult, Retry, Usage
from memory.models import AgentConfig, MessageIn
from memory.prompts.extract_facts import ExtractedFacts, ExtractFactsInput
from memory.tracing import Answered, answers_returned
from runtime import tracing
from serve.app import create_app
from serve.keys import StoreKeyStore
from tests.harness import Harness, conversation, facts, reflections
from workflows.summary import FormationSummary

FACTS = ("Alice drinks green tea every morning", "Eve answers in French")
REFLECTIONS = ("Users like short answers", "Alice is a morning person", "The talk was about tea")
SECRET_QUERY = "whatalicewhispered"


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider (OpenTelemetry allows one per process), exporting here."""
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.clear()


def _texts(messages: Sequence[MessageIn]) -> list[str]:
    return [m.content for m in messages] + list(FACTS) + list(REFLECTIONS) + [SECRET_QUERY]


def _leaks(found: Sequence[ReadableSpan], texts: Sequence[str]) -> list[str]:
    leaks = []
    for span in found:
        values = [*(span.attributes or {}).values()]
        values += [v for e in span.events for v in (e.attributes or {}).values()]
        values += [span.name, span.status.description or ""]
        for value in values:
            leaks += [f"{span.name}: {t!r}" for t in texts if t.lower() in str(value).lower()]
    return leaks


async def test_a_formation_from_an_http_request_is_one_trace_without_content(
    spans: InMemorySpanExporter, time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    assert tracing.tracing_enabled()
    h = await Harness.create(time_env, tmp_path)
    # A client as runtime.connection builds it when tracing is on: the worker inherits it.
    config = time_env.client.config()
    # (tracing's added to the test server's own: tests/conftest.py ends the runs it records)
    config["interceptors"] = [*config["interceptors"], *tracing.interceptors()]
    h.client = Client(**config)
    h.llm.script("extract_facts", facts((FACTS[0], "user"), (FACTS[1], "agent")))
    h.llm.script(
        "extract_reflections",
        reflections(agent=[REFLECTIONS[0]], user=[REFLECTIONS[1]], session=[REFLECTIONS[2]]),
    )
    keys = StoreKeyStore(h.store)
    _, token = await keys.create(["eve"])
    app = create_app(h.memory, keys)
    messages = conversation(h.settings.formation.message_interval + 1)
    body = {"messages": [m.model_dump(mode="json") for m in messages]}
    spans.clear()
    async with (
        h.worker(),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://test",
            headers={"Authorization": f"Bearer {token}"},
        ) as http,
    ):
        r = await http.post("/v1/agents/eve/sessions/s1/messages", json=body)
        assert r.status_code == 202 and r.json()["formation"]["started"] is True
        handle = h.client.get_workflow_handle("form:eve:s1", result_type=FormationSummary)
        summary = await asyncio.wait_for(handle.result(), 60)
        assert summary.facts_added == 2
        r = await http.get(f"/v1/agents/eve/facts?user_id=alice&q={SECRET_QUERY}")
        assert r.status_code == 200
    await h.store.close()

    found = spans.get_finished_spans()
    request = next(s for s in found if s.name.startswith("POST /v1/agents/") and not s.parent)
    assert request.context is not None
    formation = [s for s in found if s.context and s.context.trace_id == request.context.trace_id]
    names = {s.name for s in formation}
    # One trace: request → trigger → workflow start → workflow → activities → their calls.
    assert {
        "maybe_form_memories",
        "SignalWithStartWorkflow:FormMemories",
        "RunWorkflow:FormMemories",
        "RunActivity:extract_facts",
        "RunActivity:extract_reflections",
        "RunActivity:commit_formation",
        "llm extract_facts",
        "llm extract_reflections",
        "embed",
        "store commit formation",
    } <= names, names
    ids = {s.context.span_id for s in formation if s.context}
    orphans = [s.name for s in formation if s is not request and s.parent is None]
    assert not orphans
    assert all(s.parent.span_id in ids for s in formation if s.parent and s is not request)
    # Each LLM call is a child of its activity's span, with what an operator needs to see.
    by_id = {s.context.span_id: s for s in formation if s.context}
    llm = next(s for s in formation if s.name == "llm extract_facts")
    assert llm.parent is not None and by_id[llm.parent.span_id].name == "RunActivity:extract_facts"
    attributes = dict(llm.attributes or {})
    assert attributes["gen_ai.request.model"] and attributes["mnemos.llm.attempt"] == 1
    assert attributes["mnemos.llm.degraded"] is False
    assert int(str(attributes["gen_ai.usage.input_tokens"])) > 0
    embed = next(s for s in formation if s.name == "embed")
    assert (embed.attributes or {})["mnemos.embedding.texts"] == 2
    # Nothing said in the conversation, formed from it, or asked, is in any span.
    assert _leaks(found, _texts(messages)) == []


def test_the_exporters_come_from_otel_traces_exporter_and_a_missing_one_is_a_clear_error() -> None:
    assert tracing.exporters({}) == {} and tracing.exporters({"OTEL_TRACES_EXPORTER": "none"}) == {}
    chosen = tracing.exporters({"OTEL_TRACES_EXPORTER": "console, otlp"})
    assert isinstance(chosen["console"], ConsoleSpanExporter)
    assert isinstance(chosen["otlp_proto_http"], OTLPSpanExporter)
    with pytest.raises(tracing.TracingConfigError, match=r"zipkin.*available.*console"):
        tracing.exporters({"OTEL_TRACES_EXPORTER": "zipkin"})


class _Unusable(LLMProvider):
    """Answers its first call with something unusable and refuses the next."""

    name = "unusable"

    def __init__(self) -> None:
        self.calls = 0

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        self.calls += 1
        if self.calls == 1:
            raise MalformedOutputError(f"not JSON: {request.prompt}", provider=self.name)
        raise ProviderError("rate limited", retryable=True, provider=self.name)


async def test_a_failed_llm_call_is_a_span_with_its_kind_of_failure_and_no_text(
    spans: InMemorySpanExporter,
) -> None:
    """A provider written without tracing code is traced; an unusable answer marks its attempt
    degraded; the error's message, which quotes the prompt, stays out of the span."""
    request = LLMRequest.of(
        ExtractFactsInput(agent=AgentConfig(agent_id="eve", name="Eve"), messages=[], max_words=20),
        model="m1",
        retry=Retry(attempt=2),
    ).model_copy(update={"prompt": f"the user said {SECRET_QUERY}"})
    spans.clear()
    llm = _Unusable()
    with pytest.raises(MalformedOutputError):
        await llm.generate_structured(request, ExtractedFacts)
    with pytest.raises(ProviderError):
        await llm.generate_structured(request, ExtractedFacts)
    rejected, refused = spans.get_finished_spans()
    assert rejected.name == "llm extract_facts" and rejected.status.status_code == StatusCode.ERROR
    attributes = dict(rejected.attributes or {})
    assert attributes["mnemos.llm.degraded"] is True and attributes["mnemos.llm.attempt"] == 2
    assert attributes["error.type"] == "rejected_output"
    assert dict(refused.attributes or {})["mnemos.llm.degraded"] is False
    assert dict(refused.attributes or {})["error.type"] == "provider_error"
    assert _leaks([rejected, refused], [SECRET_QUERY]) == []


class _Unparsable(LLMProvider):
    """Answers text the schema cannot read, and says what the answer cost (as OpenAI-compatible
    servers and Gemini do)."""

    name = "unparsable"

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        usage = Usage(provider=self.name, model="m1", input_tokens=1200, output_tokens=300)
        raise MalformedOutputError("not JSON", provider=self.name, usage=usage)


async def test_an_answer_the_provider_could_not_read_is_counted_with_its_tokens() -> None:
    """The worker's token metrics count what each activity attempt's answers cost
    (runtime.metrics reads answers_returned): an unreadable answer cost its tokens too."""
    request = LLMRequest.of(
        ExtractFactsInput(agent=AgentConfig(agent_id="eve", name="Eve"), messages=[], max_words=20),
        model="m1",
    )
    with answers_returned() as answered, pytest.raises(MalformedOutputError):
        await _Unparsable().generate_structured(request, ExtractedFacts)
    assert answered == [Answered("extract_facts", "unparsable", "m1", 1200, 300)]
