"""The metrics interceptor given to the client and to the worker records each activity attempt
once, whatever interceptor stands between the two in the worker's chain (a client built with
[MetricsInterceptor(), TracingInterceptor()] puts the tracing one between them)."""

from __future__ import annotations

import contextlib
from typing import Any, cast

import temporalio.common
import temporalio.worker
from temporalio.testing import ActivityEnvironment

from memory.errors import MalformedOutputError
from memory.llm.base import LLMProvider, LLMRequest, LLMResult, Usage
from memory.models import AgentConfig
from memory.prompts.extract_facts import ExtractedFacts, ExtractFactsInput
from runtime import metrics
from tests.test_metrics import _Meter


class _Unparsable(LLMProvider):
    """One answer, unreadable, with what it cost."""

    name = "unparsable"

    async def generate_structured[M](self, request: LLMRequest, schema: type[M]) -> LLMResult[M]:
        usage = Usage(provider=self.name, model="m1", input_tokens=1200, output_tokens=300)
        raise MalformedOutputError("not JSON", provider=self.name, usage=usage)


class _Answering(temporalio.worker.ActivityInboundInterceptor):
    """The activity: one model call."""

    def __init__(self) -> None:
        pass

    async def execute_activity(self, input: temporalio.worker.ExecuteActivityInput) -> Any:
        agent = AgentConfig(agent_id="eve", name="Eve")
        request = LLMRequest.of(
            ExtractFactsInput(agent=agent, messages=[], max_words=20), model="m1"
        )
        with contextlib.suppress(MalformedOutputError):  # rejected, and paid for all the same
            await _Unparsable().generate_structured(request, ExtractedFacts)


class _ActivityMeter(_Meter):
    """The meter an activity's context holds (activity.metric_meter adds its attributes)."""

    def with_additional_attributes(self, attributes: dict[str, str]) -> _ActivityMeter:
        return self


class _Between(temporalio.worker.ActivityInboundInterceptor):
    """Another interceptor of the chain (tracing, say)."""


async def test_an_answer_is_counted_once_by_two_metrics_interceptors_apart() -> None:
    inner = metrics.MetricsInterceptor().intercept_activity(_Answering())
    chain = metrics.MetricsInterceptor().intercept_activity(_Between(inner))
    env = ActivityEnvironment()
    meter = _ActivityMeter()
    env.metric_meter = cast(temporalio.common.MetricMeter, meter)
    call = temporalio.worker.ExecuteActivityInput(
        fn=lambda: None, args=[], executor=None, headers={}
    )
    await env.run(chain.execute_activity, call)
    assert [name for name, _ in meter.adds].count("mnemos_llm_calls") == 1
