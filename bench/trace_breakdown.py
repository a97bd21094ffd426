"""Where a formation's time goes, read from its traces: bench/formation.py's formations run with
tracing on (an in-memory exporter), then each trace is cut into the steps of the workflow.

For each activity: the wait before it ran (from the workflow task that scheduled it to the start of
the activity: the workflow task's work, the command's round trip, the server's dispatch, the poll),
its execution, and inside it the LLM, embedding and store spans (summed: concurrent spans, such as
the vector searches of one step, can add up to more than the step); then the wait after it (from
its end to the next workflow task: the completion's round trip and the server scheduling the task).
Prints a table of medians over the concurrent formations, then one JSON line.

    .venv/bin/python bench/trace_breakdown.py [--sessions 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from temporalio.client import Client  # noqa: E402

from bench.common import dev_server  # noqa: E402
from bench.formation import run_formations  # noqa: E402
from memory.logging import configure_logging  # noqa: E402
from runtime import tracing  # noqa: E402

_MS = 1e-6


def _ms(start: int | None, end: int | None) -> float:
    return ((end or 0) - (start or 0)) * _MS


def breakdown(trace_spans: Sequence[ReadableSpan]) -> dict[str, float]:
    """One formation's trace as named durations (ms)."""
    out: dict[str, float] = defaultdict(float)
    runs = sorted(
        (s for s in trace_spans if s.name.startswith("RunActivity:")),
        key=lambda s: s.start_time or 0,
    )
    starts = sorted(
        (s for s in trace_spans if s.name.startswith(("StartActivity:", "CompleteWorkflow:"))),
        key=lambda s: s.start_time or 0,
    )
    by_parent: dict[int, list[ReadableSpan]] = defaultdict(list)
    for s in trace_spans:
        if s.parent is not None:
            by_parent[s.parent.span_id].append(s)
    for run in runs:
        step = run.name.removeprefix("RunActivity:")
        scheduled = by_parent_span(trace_spans, run)
        if scheduled is not None:
            out[f"{step} wait before"] += _ms(scheduled.start_time, run.start_time)
        out[f"{step} execution"] += _ms(run.start_time, run.end_time)
        assert run.context is not None
        for child in by_parent[run.context.span_id]:
            kind = child.name.split(" ")[0]  # llm, embed, store
            out[f"{step} .{kind}"] += _ms(child.start_time, child.end_time)
        following = next((s for s in starts if (s.start_time or 0) >= (run.end_time or 0)), None)
        if following is not None:
            out[f"{step} wait after"] += _ms(run.end_time, following.start_time)
    first = min((s.start_time or 0) for s in trace_spans)
    last = max((s.end_time or 0) for s in trace_spans)
    out["formation total"] = _ms(first, last)
    return out


def by_parent_span(spans: Sequence[ReadableSpan], run: ReadableSpan) -> ReadableSpan | None:
    """The StartActivity span a RunActivity span continues."""
    if run.parent is None:
        return None
    return next((s for s in spans if s.context and s.context.span_id == run.parent.span_id), None)


async def main(sessions: int) -> dict[str, Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    with tempfile.TemporaryDirectory() as tmp:
        async with dev_server(Path(tmp)) as env:
            config = env.client.config()
            config["interceptors"] = tracing.interceptors()
            await run_formations(Client(**config), Path(tmp), sessions)
    traces: dict[int, list[ReadableSpan]] = defaultdict(list)
    for span in exporter.get_finished_spans():
        if span.context is not None:
            traces[span.context.trace_id].append(span)
    formations = [
        breakdown(spans)
        for spans in traces.values()
        if any(s.name == "form_memories" for s in spans)
        and any(s.name == "RunActivity:commit_formation" for s in spans)
    ][1:]  # the first formation ran alone, on a cold store: the others ran together
    keys = sorted({k for f in formations for k in f}, key=lambda k: (k.split(" ")[0], k))
    medians = {k: round(statistics.median(f.get(k, 0.0) for f in formations), 1) for k in keys}
    waits = sum(v for k, v in medians.items() if "wait" in k)
    executions = sum(v for k, v in medians.items() if k.endswith("execution"))
    print(f"{len(formations)} concurrent formations, median ms per formation")
    for key, value in medians.items():
        print(f"  {key:42}{value:9.1f}")
    print(f"  {'waits between steps (orchestration)':42}{waits:9.1f}")
    print(f"  {'activity execution':42}{executions:9.1f}")
    return {"formations": len(formations), "median_ms": medians, "waits_ms": round(waits, 1)}


if __name__ == "__main__":
    configure_logging("warning")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=20)
    print(json.dumps(asyncio.run(main(parser.parse_args().sessions))))
