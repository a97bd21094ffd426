"""What an operator of deploy/ relies on beyond tests/test_deploy.py: the one-host stack publishes
its unauthenticated services on 127.0.0.1 only and builds the PostgreSQL DSN from the server's own
password; the HPA alone sizes the workers; pods keep the embedder's one-thread default; the
bootstrap Job is deleted before each apply (its pod template cannot change); and the README's
"Operators" section lists every command and every metric the code has."""

from __future__ import annotations

import re
from typing import Any

import typer.main
import yaml

from cli.app import app
from runtime import metrics
from tests.test_deploy import DEPLOY, K8S, _all_k8s, _compose, _docs

ROOT = DEPLOY.parent


class _ComposeLoader(yaml.SafeLoader):
    """YAML with compose's merge tags (!override, !reset) read as plain values."""


_ComposeLoader.add_constructor("!override", lambda loader, node: loader.construct_mapping(node))  # type: ignore[arg-type]
_ComposeLoader.add_constructor("!reset", lambda loader, node: None)


def _postgres_override() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.load(
        (DEPLOY / "compose.postgres.yaml").read_text(), Loader=_ComposeLoader
    )
    return doc


def _host_ip(port: Any) -> str | None:
    """The host address of a compose port (short syntax); None when published on all of them."""
    parts = str(port).split(":")
    return parts[0] if len(parts) == 3 else None


def test_every_yaml_under_deploy_parses() -> None:
    paths = sorted(DEPLOY.rglob("*.yaml")) + sorted(DEPLOY.rglob("*.yml"))
    assert len(paths) > 10
    for path in paths:
        assert list(yaml.load_all(path.read_text(), Loader=_ComposeLoader)), path


def test_the_compose_stack_publishes_only_the_api_beyond_this_host() -> None:
    published = {
        name: s["ports"]
        for services in (_compose()["services"], _postgres_override()["services"])
        for name, s in services.items()
        if s.get("ports")
    }
    assert {"temporal", "mongodb", "postgres", "prometheus", "grafana", "jaeger"} <= set(published)
    for name, ports in published.items():
        for port in ports:
            if name == "api":
                continue  # every request needs a key
            assert _host_ip(port) == "127.0.0.1", (name, port)


def test_the_postgres_password_is_the_same_in_the_server_and_the_dsn() -> None:
    doc = _postgres_override()
    server = doc["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"]
    assert server.startswith("${POSTGRES_PASSWORD")
    for name in ("setup", "worker", "api"):
        dsn = doc["services"][name]["environment"]["MNEMOS_STORE__POSTGRES_DSN"]
        assert f"postgresql://mnemos:{server}@postgres:5432/mnemos" == dsn, name


def test_the_hpa_alone_sizes_the_deployments_it_scales() -> None:
    docs = _all_k8s()
    scaled = {
        d["spec"]["scaleTargetRef"]["name"] for d in docs if d["kind"] == "HorizontalPodAutoscaler"
    }
    assert scaled == {"mnemos-worker"}
    for d in docs:
        if d["kind"] == "Deployment" and d["metadata"]["name"] in scaled:
            assert "replicas" not in d["spec"], d["metadata"]["name"]
    overlay = [d for p in sorted((K8S / "postgres").glob("*.yaml")) for d in _docs(p)]
    for d in overlay:
        if d["kind"] == "Deployment" and d["metadata"]["name"] in scaled:
            assert "replicas" not in d["spec"], d["metadata"]["name"]


def test_pods_keep_the_local_embedder_on_one_thread() -> None:
    config = next(d for d in _all_k8s() if d["kind"] == "ConfigMap")["data"]
    assert int(config.get("MNEMOS_EMBEDDING__LOCAL_THREADS", 1)) == 1


def test_every_documented_apply_deletes_the_bootstrap_job_first() -> None:
    lines = (DEPLOY / "README.md").read_text().splitlines()
    applies = [i for i, line in enumerate(lines) if line.startswith("kubectl apply -k")]
    assert len(applies) >= 2
    for i in applies:
        before = lines[i - 1]
        assert before.startswith("kubectl delete job mnemos-bootstrap --ignore-not-found"), i
    job = next(d for d in _all_k8s() if d["kind"] == "Job")
    assert job["metadata"]["name"] == "mnemos-bootstrap"


def _operators_section() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme[readme.index("## Operators\n") : readme.index("## Your data\n")]


def test_the_operators_section_lists_every_command_and_metric() -> None:
    section = _operators_section()
    for name in typer.main.get_command(app).commands:  # type: ignore[attr-defined]
        assert f"| `mnemos {name}" in section, name
    table = section[section.index("### Metrics") : section.index("### Upgrades")]
    rows = set(re.findall(r"^\| `(mnemos_\w+)` \|", table, flags=re.MULTILINE))
    assert rows == set(metrics.ALL_METRICS)
