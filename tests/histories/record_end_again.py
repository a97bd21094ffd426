"""Record the EndSession history of a session ended, resumed and ended again while the first end
still formed (the END_AGAIN patch): ``python -m tests.histories.record_end_again`` writes
end_session/again.json, which tests/workflows/test_replay.py replays.

The run is started by the first end's signal-with-start, receives the second end's signal while
its formation is held in extraction, then forms and consolidates a second time.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_test_server
from runtime.payloads import payload_data_converter
from tests.harness import Harness, conversation, gate_first_extraction, reflections

HERE = Path(__file__).parent / "end_session"


async def record() -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=payload_data_converter,
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            h = await Harness.create(env, Path(tmp))
            gate = gate_first_extraction(h)
            h.llm.script(
                "extract_reflections",
                reflections(session=["Alice is preparing a recital"]),
                reflections(session=["Alice bought a new bow"]),
            )
            await h.record("s1", conversation(4))
            async with h.worker():
                first = await h.memory.end_session("eve", "s1")
                await gate.entered.wait()
                await h.record("s1", conversation(2, start=4))
                await h.memory.end_session("eve", "s1")
                gate.release.set()
                ended = await first.result()
                history = await first.fetch_history()
            assert ended.formation.messages_formed == 6, ended
        HERE.mkdir(exist_ok=True)
        (HERE / "again.json").write_text(history.to_json())
        print(f"recorded end_session/again.json ({len(history.events)} events)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record())
