"""/v1/agents on a small local model: an agent whose persona and memory instructions cannot fit
its context beside the memory is refused with a 422 saying why, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from memory.settings import ModelSettings
from serve.app import create_app
from serve.keys import StoreKeyStore
from tests.harness import Harness

LONG = "the team plans the festival budget with every vendor " * 70


async def test_a_persona_the_models_context_cannot_hold_gets_a_422_and_changes_nothing(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path, models=ModelSettings(context_tokens=8192))
    keys = StoreKeyStore(h.store)
    _, token = await keys.create(["eve", "ann"], name="operator")
    app = create_app(h.memory, keys, temporal_ui_url="http://ui.test")
    long = {"persona": LONG[:3900], "memory_instructions": LONG[:3900]}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://test",
        headers={"Authorization": f"Bearer {token}"},
    ) as c:
        r = await c.post("/v1/agents", json={"agent_id": "ann", "name": "Ann", **long})
        assert r.status_code == 422, r.text
        assert "MNEMOS_MODELS__CONTEXT_TOKENS" in r.json()["detail"]
        assert (await c.get("/v1/agents/ann")).status_code == 404

        r = await c.patch("/v1/agents/eve", json=long)
        assert r.status_code == 422, r.text
        assert "persona" in r.json()["detail"]
        assert (await c.get("/v1/agents/eve")).json() == h.agent.model_dump()

        r = await c.patch("/v1/agents/eve", json={"persona": "Short answers, in English."})
        assert r.status_code == 200, r.text
    await h.store.close()
