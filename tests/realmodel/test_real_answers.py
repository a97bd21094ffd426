"""Issue #12 case 5: a real small model's answers, replayed byte for byte through the
OpenAI-compatible provider into FormMemories. No session stops; each outcome is the documented
one (README "When the model misbehaves"):

- fact extraction and reflections answered schema-valid: their facts and reflections are formed;
- every recorded dedup decision is rejected (looping in a text, now cut while it streams, or an
  answer to the old schema): after its retries the decision step falls back to adding the new
  facts unmerged, the window is marked degraded with the reason, its reflections are still formed,
  the cursor moves, and the session's next window forms.
"""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.llm.openai_provider import OpenAIProvider
from memory.model_check import load_transcript
from tests.fake_provider_server import FakeProviderServer
from tests.harness import Harness
from tests.realmodel.replay import Recorded, Replayer, recorded  # noqa: F401 - the fixture

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


async def test_real_model_answers_never_stop_a_session(
    time_env: WorkflowEnvironment,
    tmp_path: Path,
    recorded: list[Recorded],  # noqa: F811
) -> None:
    _, first_id, first = load_transcript(SAMPLES / "conversation.json")
    _, second_id, second = load_transcript(SAMPLES / "corrections.json")
    replayer = Replayer(recorded)
    with FakeProviderServer() as server:
        server.script(*[replayer] * 200)
        h = await Harness.create(time_env, tmp_path)
        h.llm = OpenAIProvider(api_key=None, base_url=server.openai_base_url)  # type: ignore[assignment]
        await h.record(first_id, first)
        await h.record(second_id, second)
        async with h.worker():
            one = await h.form(first_id)
            two = await h.form(second_id)

    served = [a.task for a in replayer.served]
    assert one.degraded == [] and one.formations == 1
    assert one.facts_added >= 3 and one.reflections_added >= 1

    assert two.formations == 1
    decide_answers = [a for a in replayer.served if a.task == "decide_facts"]
    assert len(decide_answers) == 5, served  # every attempt a recorded answer, then the fallback
    [step] = two.degraded
    assert step.step == "decide_fact_changes"
    # The looping answers are cut while they stream, a few hundred characters in, not at the cap.
    assert "repeats itself" in step.reason or "schema" in step.reason
    assert two.decisions.get("ADD", 0) >= 1 and set(two.decisions) == {"ADD"}
    # What needs no decision is still formed: the reflection step ran after the fallback. This
    # window's recorded reflections only restate the prompt's agent-reflection bullets, citing
    # nothing ("The agent should always have domain knowledge and insights that apply
    # universally."): echoes, dropped (memory/pipeline/echoes.py).
    assert served.count("extract_reflections") == 2, served  # one per formation
    assert two.reflections_added == 0
    state = await h.store.get_session_agent_state(second_id, "eve")
    assert state is not None and state.cursor_seq == len(second)
