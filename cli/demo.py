"""`mnemos up` (`make run`): the local stack (Temporal dev server + UI, embedded store, a worker)
and the main job: a bundled conversation goes through formation, then we print what was formed, the
memory context a next turn would get, fact searches and the link of the run in the Temporal UI.

Runs with no API key (offline heuristic LLM + local MiniLM embeddings); uses OpenAI/Gemini when their
keys are set. Ctrl-C stops everything; a second run reuses the data (messages are recorded once).
"""

from __future__ import annotations

import asyncio
import json
import signal
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cli.demo_api import Served, serving_api
from cli.stack import dev_server
from client.memory_client import MemoryClient
from memory.models import AgentConfig, FactFilter, MessageIn
from memory.settings import Settings
from worker import running_worker
from workflows.naming import formation_workflow_id

# The bundled sample: cli/samples is package data in a wheel or the image and a link to samples/
# in a checkout (samples/ itself where the link was not made), as cli.check_model.bundled_samples.
_HERE = Path(__file__).resolve().parent
_SAMPLES = _HERE / "samples" if (_HERE / "samples").is_dir() else _HERE.parent / "samples"
SAMPLE = _SAMPLES / "conversation.json"


def _print(title: str, body: str) -> None:
    print(f"\n=== {title} ===\n{body}", flush=True)


def just_said(messages: list[MessageIn], now: datetime) -> list[MessageIn]:
    """The sample as a conversation that has just happened (its last message a minute ago), its
    intervals kept: with its own dates it would age out of the memory context's week of recent
    facts (context.fifo_max_age_hours), and the demo would show less as the calendar moves on. A
    second run records the same ids and contents: duplicates, whatever their times."""
    shift = now - timedelta(minutes=1) - max(m.created_at for m in messages)
    return [m.model_copy(update={"created_at": m.created_at + shift}) for m in messages]


async def demo(memory: MemoryClient, settings: Settings, sample: dict[str, Any]) -> None:
    agent = AgentConfig.model_validate(sample["agent"])
    session_id: str = sample["session_id"]
    if await memory.store.get_agent(agent.agent_id) is None:  # a configuration changed since stays
        await memory.register_agent(agent)
    messages = just_said([MessageIn.model_validate(m) for m in sample["messages"]], memory.clock())
    recorded = await memory.record_messages(agent.agent_id, session_id, messages)
    _print(
        "Conversation",
        f"{len(messages)} messages in session {session_id}: {recorded.inserted} new, {recorded.duplicates} already recorded",
    )
    summary = await memory.form_memories(agent.agent_id, session_id, force=True, wait=True)
    assert summary is not None
    if summary.formations == 0:
        _print("Formation", "nothing new to form (this conversation was formed by an earlier run)")
    else:
        _print("Formation", json.dumps(summary.memo(), indent=2))
    user_id = next((m.user_id for m in messages if m.user_id), None)
    facts = await memory.store.list_facts(
        FactFilter(agent_id=agent.agent_id, user_id=user_id), limit=50
    )
    # The facts of this conversation: the store may hold others (another session, a note).
    facts = [f for f in facts if f.source_session_id == session_id]
    _print("Facts formed", "\n".join(f"- [{f.scope}] {f.content}" for f in facts) or "(none)")
    context = await memory.memory_context(agent.agent_id, session_id, user_id=user_id)
    _print("Memory context for the next turn", context or "(empty)")
    for query in sample.get("search", []):
        result = await memory.search_facts(
            agent.agent_id, query, session_id=session_id, user_id=user_id, top_k=5
        )
        lines = (
            "\n".join(f"- {h.content} ({h.age}, score {h.score:.3f})" for h in result.hits)
            or "(no match)"
        )
        _print(f"search_facts({query!r})", lines)
    link = f"{settings.temporal.ui_url}/namespaces/{settings.temporal.namespace}/workflows/{formation_workflow_id(agent.agent_id, session_id)}"
    _print("Temporal UI", link)


def _announcement(api: Served, sample: dict[str, Any]) -> str:
    user_id = next((m.get("user_id") for m in sample["messages"] if m.get("user_id")), None)
    return api.announcement(sample["agent"]["agent_id"], sample["session_id"], user_id)


async def up(settings: Settings, *, exit_after_demo: bool, api_port: int = 8000) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    host, port = settings.temporal.address.rsplit(":", 1)
    ui_port = int(settings.temporal.ui_url.rsplit(":", 1)[1])
    data_dir = settings.store.sqlite_path.parent
    async with dev_server(data_dir, host=host, port=int(port), ui_port=ui_port) as started:
        print(
            f"Temporal dev server {'started' if started else 'already running'} at {settings.temporal.address}; UI {settings.temporal.ui_url}",
            flush=True,
        )
        async with running_worker(settings, local=True) as (client, deps):
            print(
                f"Store: {settings.store.backend}; LLM: {deps.llm.name}; embeddings: {deps.embedder.model}",
                flush=True,
            )
            memory = MemoryClient(client, deps.store, settings, embedder=deps.embedder)
            sample = json.loads(SAMPLE.read_text())
            agent_id = sample["agent"]["agent_id"]
            async with serving_api(memory, data_dir, agent_id=agent_id, port=api_port) as api:
                job = asyncio.create_task(demo(memory, settings, sample))
                stopper = asyncio.create_task(stop.wait())
                done, _ = await asyncio.wait({job, stopper}, return_when=asyncio.FIRST_COMPLETED)
                if job in done:
                    job.result()
                    _print("HTTP API and memory page", _announcement(api, sample))
                    if not exit_after_demo:
                        print(
                            "\nStack running (worker, cold-sessions schedule, Temporal UI). Ctrl-C to stop.",
                            flush=True,
                        )
                        await stopper
                job.cancel()
                stopper.cancel()
    print("Stopped.", flush=True)
