"""deploy/ cannot be started here (no Docker, no cluster): these tests hold its files to what can
be checked offline. Every file parses; every command an image, a compose service or a manifest
runs is a real `mnemos` command; every MNEMOS_* variable is a real setting with a valid value;
every ConfigMap and Secret a pod references is defined; what the Dockerfile copies exists."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml
from typer.core import TyperGroup

from cli.app import app
from memory.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
MANIFESTS = sorted(K8S.glob("*.yaml"))


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _all_k8s() -> list[dict[str, Any]]:
    return [doc for path in MANIFESTS for doc in _docs(path)]


def _named(kind: str) -> set[str]:
    return {d["metadata"]["name"] for d in _all_k8s() if d.get("kind") == kind}


def _is_cli_command(args: list[str]) -> bool:
    """``args`` (after the `mnemos` entrypoint) name a command of the app, options aside."""
    command = typer.main.get_command(app)
    for arg in args:
        if arg.startswith("-") or not isinstance(command, TyperGroup):
            break  # options, or the arguments of the command reached
        sub = command.commands.get(arg)
        if sub is None:
            return False
        command = sub
    # A group runs by itself only when it says so (`mnemos serve`, a callback with options).
    return not isinstance(command, TyperGroup) or command.invoke_without_command


def test_the_command_check_knows_commands_from_groups_and_typos() -> None:
    assert _is_cli_command(["worker"]) and _is_cli_command(["schedule", "ensure"])
    assert _is_cli_command(["facts", "edit", "f_1", "text"])
    assert not _is_cli_command(["schedule"])  # a group, not a command
    assert not _is_cli_command(["wroker"])
    assert _is_cli_command(["serve", "--host", "0.0.0.0"])  # a sub-app that runs by itself


def _check_names(names: list[str]) -> None:
    for name in names:
        assert name.startswith("MNEMOS_"), name
        group, _, field = name.removeprefix("MNEMOS_").lower().partition("__")
        assert group in Settings.model_fields, f"{name}: no settings group {group!r}"
        if field:
            model = Settings.model_fields[group].annotation
            assert isinstance(model, type) and field in model.model_fields, f"{name}: no field"


def _settings_from(env: dict[str, str]) -> Settings:
    """Settings built from these MNEMOS_* values only: unknown names and bad values both fail."""
    _check_names(list(env))
    nested: dict[str, Any] = {}
    for name, value in env.items():
        group, _, field = name.removeprefix("MNEMOS_").lower().partition("__")
        if field:
            nested.setdefault(group, {})[field] = value
        else:
            nested[group] = value
    return Settings.model_validate(nested)


def _mnemos_env(pairs: dict[str, Any]) -> dict[str, str]:
    """The MNEMOS_* values, compose's ``${VAR:-default}`` read as its default (VAR unset)."""
    return {
        k: re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(v))
        for k, v in pairs.items()
        if k.startswith("MNEMOS_")
    }


# ---------------------------------------------------------------- the image


def _dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            instruction, _, rest = line.partition(" ")
            out.append((instruction.upper(), rest.strip()))
    return out


def test_the_image_runs_the_mnemos_cli_and_its_worker_by_default() -> None:
    steps = _dockerfile()
    entrypoint = [json.loads(rest) for ins, rest in steps if ins == "ENTRYPOINT"]
    cmd = [json.loads(rest) for ins, rest in steps if ins == "CMD"]
    assert entrypoint[-1] == ["mnemos"]
    assert cmd[-1] == ["worker"] and _is_cli_command(cmd[-1])
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["mnemos"] == "cli.app:main"  # what `pip install .` puts on PATH


def test_the_image_copies_what_exists_and_serves_metrics_on_all_interfaces() -> None:
    steps = _dockerfile()
    for ins, rest in steps:
        if ins == "COPY" and not rest.startswith("--from"):
            for source in rest.split()[:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    ignored = {
        line.strip()
        for line in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    copied = {
        source.rstrip("/")
        for ins, rest in steps
        if ins == "COPY" and not rest.startswith("--from")
        for source in rest.split()[:-1]
    }
    assert not copied & ignored, "the build context leaves out what the image copies"
    assert ("EXPOSE", "9464") in steps
    env = dict(pair.split("=", 1) for ins, rest in steps if ins == "ENV" for pair in rest.split())
    settings = _settings_from(_mnemos_env(env))
    assert settings.temporal.metrics_bind == "0.0.0.0:9464"
    # The health check asks the worker's event loop (runtime/health.py), where the image binds it.
    assert ("EXPOSE", "9465") in steps and settings.temporal.health_bind == "0.0.0.0:9465"
    [check] = [rest for ins, rest in steps if ins == "HEALTHCHECK"]
    assert "http://127.0.0.1:9465/healthz" in check


# ---------------------------------------------------------------- compose


def _compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return doc


def test_compose_runs_temporal_atlas_local_setup_and_n_workers() -> None:
    services = _compose()["services"]
    assert services["temporal"]["image"].startswith("temporalio/temporal:")
    assert "127.0.0.1:8233:8233" in services["temporal"]["ports"]  # the Web UI, this host only
    assert services["mongodb"]["image"].startswith("mongodb/mongodb-atlas-local:")
    worker = services["worker"]
    assert worker["command"] == ["worker"]
    assert str(worker["deploy"]["replicas"]).startswith("${MNEMOS_WORKERS")
    assert worker["depends_on"]["setup"]["condition"] == "service_completed_successfully"
    assert worker["build"]["dockerfile"] == "deploy/Dockerfile"
    assert (DEPLOY / worker["build"]["context"] / worker["build"]["dockerfile"]).is_file()


def test_compose_registers_the_search_attributes_the_workflows_use() -> None:
    from workflows.naming import ALL_KEYS

    command = " ".join(_compose()["services"]["temporal"]["command"])
    for key in ALL_KEYS:
        assert f"--search-attribute={key.name}=Keyword" in command


def test_every_compose_mnemos_service_runs_a_cli_command_with_valid_settings() -> None:
    services = _compose()["services"]
    ours = {n: s for n, s in services.items() if "deploy/Dockerfile" in str(s.get("build"))}
    assert {"setup", "indexes", "worker"} <= set(ours)
    for name, service in ours.items():
        assert _is_cli_command(service["command"]), name
        settings = _settings_from(_mnemos_env(service["environment"]))
        assert settings.store.backend == "mongo"
        assert settings.temporal.address == "temporal:7233"  # the compose service name


# ---------------------------------------------------------------- Kubernetes


def test_every_manifest_parses_and_kustomize_lists_existing_files() -> None:
    assert MANIFESTS
    for path in MANIFESTS:
        for doc in _docs(path):
            assert {"apiVersion", "kind"} <= set(doc), path.name
    kustomization = _docs(K8S / "kustomization.yaml")[0]
    for resource in kustomization["resources"]:
        assert (K8S / resource).is_file(), resource
    # The Secret is created by the operator (values never in the repository).
    assert "secret.example.yaml" not in kustomization["resources"]


def _pod_specs() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for doc in _all_k8s():
        if doc["kind"] in ("Deployment", "Job"):
            out.append((doc["metadata"]["name"], doc["spec"]["template"]["spec"]))
    return out


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod["containers"]]


@pytest.mark.parametrize("kind", ["ConfigMap", "Secret"])
def test_pods_reference_only_configmaps_and_secrets_that_are_defined(kind: str) -> None:
    defined = _named(kind)
    ref_key = "configMapRef" if kind == "ConfigMap" else "secretRef"
    key_ref = "configMapKeyRef" if kind == "ConfigMap" else "secretKeyRef"
    secret_keys = {k for d in _all_k8s() if d["kind"] == "Secret" for k in d.get("stringData", {})}
    referenced = 0
    for name, pod in _pod_specs():
        for c in _containers(pod):
            for source in c.get("envFrom", []):
                if ref_key in source:
                    assert source[ref_key]["name"] in defined, (name, source)
                    referenced += 1
            for var in c.get("env", []):
                ref = var.get("valueFrom", {}).get(key_ref)
                if ref:
                    assert ref["name"] in defined, (name, var)
                    if kind == "Secret":
                        assert ref["key"] in secret_keys, (name, ref)
                    referenced += 1
    assert referenced > 0


def test_every_container_runs_a_cli_command_and_every_variable_is_a_real_setting() -> None:
    config = next(d for d in _all_k8s() if d["kind"] == "ConfigMap")["data"]
    secret = next(d for d in _all_k8s() if d["kind"] == "Secret")["stringData"]
    settings = _settings_from(_mnemos_env({**config, **secret}))
    assert settings.temporal.metrics_bind == "0.0.0.0:9464"  # scraped from outside the pod
    for name, pod in _pod_specs():
        for c in _containers(pod):
            assert c["image"].startswith("mnemos:"), (name, c["name"])
            assert _is_cli_command(c["args"]), (name, c["args"])
            _check_names([v["name"] for v in c.get("env", []) if v["name"].startswith("MNEMOS_")])


def test_the_worker_deployment_is_scaled_probed_and_sized() -> None:
    deployment = next(d for d in _all_k8s() if d["kind"] == "Deployment")
    worker = deployment["spec"]["template"]["spec"]["containers"][0]
    assert worker["args"] == ["worker"]
    assert {"cpu", "memory"} <= set(worker["resources"]["requests"])
    metrics_port = next(p for p in worker["ports"] if p["name"] == "metrics")["containerPort"]
    assert metrics_port == 9464
    # Liveness from the worker's event loop (runtime/health.py), on the port its env binds.
    assert worker["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    health_port = next(p for p in worker["ports"] if p["name"] == "health")["containerPort"]
    env = {e["name"]: e.get("value") for e in worker["env"]}
    assert env["MNEMOS_TEMPORAL__HEALTH_BIND"] == f"0.0.0.0:{health_port}"
    hpa = next(d for d in _all_k8s() if d["kind"] == "HorizontalPodAutoscaler")
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert hpa["spec"]["minReplicas"] >= 2


def test_the_bootstrap_job_sets_up_then_ensures_the_schedule() -> None:
    job = next(d for d in _all_k8s() if d["kind"] == "Job")
    pod = job["spec"]["template"]["spec"]
    assert [c["args"] for c in pod["initContainers"]] == [["setup"], ["setup-indexes"]]
    assert [c["args"] for c in pod["containers"]] == [["schedule", "ensure"]]
    assert not [d for d in _all_k8s() if d["kind"] == "CronJob"]  # Temporal schedules the work


# ---------------------------------------------------------------- the HTTP API (mnemos serve)


def _option(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_the_image_carries_the_serve_package_and_exposes_its_port() -> None:
    steps = _dockerfile()
    assert ("COPY", "serve serve") in steps
    assert ("EXPOSE", "8000") in steps


def test_compose_serves_the_api_from_the_same_image_on_all_interfaces() -> None:
    services = _compose()["services"]
    api, worker = services["api"], services["worker"]
    assert (api["image"], api["build"]) == (worker["image"], worker["build"])
    command = api["command"]
    assert command[0] == "serve" and _is_cli_command(command)
    assert _option(command, "--host") == "0.0.0.0"
    port = _option(command, "--port")
    assert f"{port}:{port}" in api["ports"]
    assert f"http://127.0.0.1:{port}/healthz" in " ".join(api["healthcheck"]["test"])
    assert api["depends_on"]["setup"]["condition"] == "service_completed_successfully"


def _api_manifests() -> tuple[dict[str, Any], dict[str, Any]]:
    docs = _all_k8s()
    deployment = next(
        d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "mnemos-api"
    )
    service = next(d for d in docs if d["kind"] == "Service")
    return deployment, service


def test_the_api_deployment_runs_serve_probed_on_its_port() -> None:
    deployment, _ = _api_manifests()
    worker = next(d for d in _all_k8s() if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [api] = pod["containers"]
    assert api["image"] == worker["spec"]["template"]["spec"]["containers"][0]["image"]
    args = api["args"]
    assert args[0] == "serve" and _is_cli_command(args)
    assert _option(args, "--host") == "0.0.0.0"
    port = next(p for p in api["ports"] if p["name"] == "http")["containerPort"]
    assert str(port) == _option(args, "--port")
    assert (api["readinessProbe"]["httpGet"]["path"], api["readinessProbe"]["httpGet"]["port"]) == (
        "/readyz",
        "http",
    )
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {"cpu", "memory"} <= set(api["resources"]["requests"])
    assert deployment["spec"]["replicas"] >= 2  # keys in the store: replicas share them
    assert [s["configMapRef"]["name"] for s in api["envFrom"]] == ["mnemos-config"]
    env = {v["name"]: v for v in api["env"]}
    uri = env["MNEMOS_STORE__MONGODB_URI"]["valueFrom"]["secretKeyRef"]
    assert (uri["name"], uri["key"]) == ("mnemos-secrets", "MNEMOS_STORE__MONGODB_URI")


def test_the_api_service_selects_the_api_pods_only() -> None:
    deployment, service = _api_manifests()
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    selector = service["spec"]["selector"]
    assert selector == deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= labels.items() and selector["app.kubernetes.io/component"] == "api"
    [port] = service["spec"]["ports"]
    assert port["targetPort"] == "http"
    kustomization = _docs(K8S / "kustomization.yaml")[0]
    assert "serve.yaml" in kustomization["resources"]
