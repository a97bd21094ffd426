"""What deploy/grafana's dashboard queries: its panels and the metric names in their PromQL."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DASHBOARD = (
    Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "dashboards" / "mnemos.json"
)
_METRIC = re.compile(r"\b((?:mnemos|temporal)_[a-z0-9_]+)")
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")


def dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return doc


def panels() -> list[dict[str, Any]]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def expressions() -> list[str]:
    queries = [t["expr"] for p in panels() for t in p["targets"]]
    queries += [v["query"]["query"] for v in dashboard()["templating"]["list"]]
    return queries


def series() -> set[str]:
    """Every series name the queries read (a histogram's as ``name_bucket``)."""
    return {m for e in expressions() for m in _METRIC.findall(e)}


def metric(name: str) -> str:
    """The metric a series belongs to (a histogram's series carry a suffix)."""
    for suffix in HISTOGRAM_SERIES:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name
