"""The two steps that read a window's transcript start with the same text, so a server with
prefix caching reads the transcript once per formation: same system text, and the user text
identical up to the end of the conversation; only the task differs after it."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.llm.base import LLMRequest
from memory.llm.openai_provider import OpenAIProvider
from memory.models import AgentConfig
from memory.prompts import ExtractFactsInput, ExtractReflectionsInput, PromptMessage, render
from memory.prompts.extract_facts import ExtractedFacts
from memory.prompts.extract_reflections import CurrentMemory
from tests.fake_provider_server import FakeProviderServer, openai_chat

AGENT = AgentConfig(
    agent_id="eve", name="Eve", persona="A festival producer.", memory_instructions="Budgets."
)
MESSAGES = [
    PromptMessage(seq=i, role="user", name="Alice", user_id="alice",
                  content=f"Message {i}: the budget is ${i},000.",
                  created_at=datetime(2026, 11, 21, 10, i, tzinfo=UTC))
    for i in range(1, 13)
]  # fmt: skip


def test_extraction_and_reflections_share_their_prompt_up_to_the_task() -> None:
    facts = render(ExtractFactsInput(agent=AGENT, messages=MESSAGES, max_words=30))
    reflections = render(
        ExtractReflectionsInput(
            agent=AGENT,
            messages=MESSAGES,
            scopes=("agent", "user", "session"),
            current={"user": CurrentMemory(consolidated="Alice prefers short answers.")},
            new_facts=["The budget is $12,000."],
            max_words=35,
        )
    )
    assert facts.system == reflections.system
    end = facts.user.index("</conversation>")
    shared = facts.user[: end + len("</conversation>")]
    assert reflections.user.startswith(shared)
    assert "Message 12" in shared and "A festival producer." in shared
    # What differs, the task and the current memory, comes after the transcript.
    assert reflections.user.index("Alice prefers short answers.") > len(shared)
    assert facts.user.index("extract factual information") > len(shared)


async def test_the_provider_reports_the_prompt_tokens_the_server_cache_supplied() -> None:
    reply = openai_chat('{"facts": []}', prompt_tokens=1200)
    reply.body["usage"]["prompt_tokens_details"] = {"cached_tokens": 900}
    request = LLMRequest.of(
        ExtractFactsInput(agent=AGENT, messages=MESSAGES, max_words=30), model="m"
    )
    with FakeProviderServer() as server:
        server.script(reply)
        llm = OpenAIProvider(api_key=None, base_url=server.openai_base_url)
        result = await llm.generate_structured(request, ExtractedFacts)
        await llm.close()
    assert (result.usage.input_tokens, result.usage.cached_input_tokens) == (1200, 900)
