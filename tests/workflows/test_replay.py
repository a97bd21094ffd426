"""Replay committed histories against the current workflow code: a non-deterministic change fails here
before it can break runs already in flight in production."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from memory.settings import CodecSettings
from runtime.codec import data_converter
from runtime.payloads import payload_data_converter
from worker import WORKFLOWS

# cold_sessions/: ColdSessions before and after its START_ONLY patch, and finishing ended
# sessions before and after FINISH_ENDED_PAGES (record_cold.py); degraded/: the fallbacks of
# issue #12 and a run that failed on invalid output before them; split/: a window split down to
# one message passed over (issue #21); due_after/: a run that went round because its commit left
# the session due, its second trigger held back; again_after_erasure/: a run whose commit was
# discarded for an erasure and that formed its window again, forced by a request that came
# meanwhile in one of them; outage/: a ConsolidateScope whose draft failed on a provider outage,
# before OUTAGE_WAIT (the run failed) and from it on (it waited and consolidated); conflicts/: a
# ConsolidateScope whose five drafts each met a person's edit, before CONFLICT_BACKOFF (the fifth
# failed the run) and from it on (it waited, drafted again and consolidated); dense/: a dense
# message read in pieces, halved on a full answer and on a failure, a piece passed over
# (DENSE_MESSAGES, record_dense.py); drain/: every run of a drain that continued as new after
# each pass, its split ending in a message passed over and going back to whole windows
# (SPLIT_PASSED_OVER, DRAIN_TOTALS, record_drain.py); end_session/progress.json: an end waiting on a
# drain longer than its budget that keeps moving (PROGRESS_DEADLINE); batches/: a ConsolidateScope buffer merged
# in batches, one split for a refused reflection (IN_BATCHES, record_batches.py; _27f3504: the first
# version, AFTER_A_PASS) (subfolders, so
# that the CLI's replay test of the top folder keeps its own count).
HISTORIES = sorted((Path(__file__).parent.parent / "histories").glob("**/*.json"))


def test_histories_are_committed() -> None:
    assert len(HISTORIES) >= 3


# With a codec key set, histories written before it (plain payloads) must still replay: the
# codec passes unencrypted payloads through. Encrypted histories: tests/lifecycle/test_codec.py.
CONVERTERS = {
    "plain": payload_data_converter,
    "codec": data_converter(CodecSettings(key=base64.b64encode(bytes(range(32))).decode())),
}


@pytest.mark.parametrize("converter", CONVERTERS)
@pytest.mark.parametrize("path", HISTORIES, ids=[f"{p.parent.name}/{p.stem}" for p in HISTORIES])
async def test_history_replays_deterministically(path: Path, converter: str) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(workflows=list(WORKFLOWS), data_converter=CONVERTERS[converter])
    await replayer.replay_workflow(history)
