"""deploy/grafana: the dashboard queries only metrics the code exports (mnemos' own by their names
in runtime/metrics.py, the SDK's in tests/test_metrics.py against a real scrape), and the compose
file provisions it over a Prometheus that scrapes every worker and API replica."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from memory.settings import Settings
from runtime import metrics
from tests import grafana

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def _yaml(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


def test_every_mnemos_metric_the_dashboard_queries_is_one_the_code_exports() -> None:
    ours = {s for s in grafana.series() if s.startswith("mnemos_")}
    assert ours, "the dashboard charts mnemos' metrics"
    for name in ours:
        base = grafana.metric(name)
        assert base in metrics.ALL_METRICS, f"{name}: not a metric of runtime/metrics.py"
        if name != base:  # _bucket/_sum/_count exist for histograms only
            assert base in metrics.HISTOGRAMS, f"{name}: {base} is not a histogram"
    # Each issue-25 view is there: throughput, latency, tokens, degraded, deferred, cold, lag.
    charted = {grafana.metric(s) for s in ours}
    assert {
        metrics.FORMATIONS,
        metrics.LLM_TOKENS,
        metrics.FORMATIONS_DEFERRED,
        metrics.COLD_SESSIONS_FOUND,
        metrics.CONSOLIDATION_LAG,
        "mnemos_formation_degraded",
    } <= charted
    assert "temporal_workflow_endtoend_latency_bucket" in grafana.series()
    assert "temporal_activity_execution_latency_bucket" in grafana.series()


def test_every_panel_queries_the_provisioned_prometheus() -> None:
    datasources = _yaml(DEPLOY / "grafana/provisioning/datasources/prometheus.yaml")
    [source] = datasources["datasources"]
    panels = grafana.panels()
    ids = [p["id"] for p in grafana.dashboard()["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert panel["datasource"]["uid"] == source["uid"], panel["title"]
        assert panel["targets"] and all(t["expr"].strip() for t in panel["targets"])
        assert panel["description"], f"{panel['title']}: say what it shows and from which metric"
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24


def test_compose_provisions_grafana_over_a_prometheus_scraping_workers_and_api() -> None:
    compose = _yaml(DEPLOY / "compose.yaml")
    services = compose["services"]
    mounts = services["grafana"]["volumes"]
    assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in mounts
    provider = _yaml(DEPLOY / "grafana/provisioning/dashboards/mnemos.yaml")["providers"][0]
    dashboards_dir = provider["options"]["path"]
    assert f"./grafana/dashboards:{dashboards_dir}:ro" in mounts
    assert any(
        m.startswith("./prometheus/prometheus.yml:") for m in services["prometheus"]["volumes"]
    )
    scrape = _yaml(DEPLOY / "prometheus/prometheus.yml")["scrape_configs"]
    targets = {
        (n, sd["port"]) for job in scrape for sd in job["dns_sd_configs"] for n in sd["names"]
    }
    env = {
        k: str(v) for k, v in compose["x-mnemos"]["environment"].items() if k.startswith("MNEMOS_")
    }
    bind = Settings.model_validate({}).temporal.metrics_bind
    port = int(env.get("MNEMOS_TEMPORAL__METRICS_BIND", bind).rsplit(":", 1)[1])
    assert {("worker", port), ("api", port)} <= targets
    assert all(s in services for s, _ in targets)
