"""deploy/ with PostgreSQL + pgvector as the store (compose override, kustomize overlay), held to
what can be checked offline like the rest of deploy/ (tests/test_deploy.py)."""

from __future__ import annotations

from typing import Any

import yaml

from tests.test_deploy import (
    DEPLOY,
    K8S,
    _all_k8s,
    _check_names,
    _compose,
    _containers,
    _docs,
    _mnemos_env,
    _pod_specs,
    _settings_from,
)


class _ComposeLoader(yaml.SafeLoader):
    """YAML with compose's merge tags (!override, !reset) read as plain values."""


_ComposeLoader.add_constructor("!override", lambda loader, node: loader.construct_mapping(node))  # type: ignore[arg-type]
_ComposeLoader.add_constructor("!reset", lambda loader, node: None)


def test_the_compose_postgres_override_swaps_the_store_for_every_mnemos_service() -> None:
    base = _compose()["services"]
    doc = yaml.load((DEPLOY / "compose.postgres.yaml").read_text(), Loader=_ComposeLoader)
    override = doc["services"]
    assert override["postgres"]["image"].startswith("pgvector/pgvector:pg")
    # MongoDB and its search-index step are off unless asked for.
    assert override["mongodb"]["profiles"] == override["indexes"]["profiles"] == ["mongo"]
    assert set(override["setup"]["depends_on"]) == {"temporal", "postgres"}
    ours = {n for n, s in base.items() if "deploy/Dockerfile" in str(s.get("build"))} - {"indexes"}
    for name in ours:
        env = {**base[name]["environment"], **override[name]["environment"]}  # compose merges
        settings = _settings_from(_mnemos_env(env))
        assert settings.store.backend == "postgres", name
        dsn = settings.store.postgres_dsn
        assert dsn is not None and "@postgres:5432/" in dsn.get_secret_value()
    assert "postgres-data" in doc["volumes"]


def _overlay() -> list[dict[str, Any]]:
    return [doc for path in sorted((K8S / "postgres").glob("*.yaml")) for doc in _docs(path)]


def test_the_kubernetes_postgres_overlay_patches_what_the_base_defines() -> None:
    overlay = K8S / "postgres"
    kustomization = _docs(overlay / "kustomization.yaml")[0]
    assert "../" in kustomization["resources"]
    for resource in kustomization["resources"]:
        assert (overlay / resource).exists(), resource
    patched = [doc for patch in kustomization["patches"] for doc in _docs(overlay / patch["path"])]
    base = {(d["kind"], d["metadata"]["name"]): d for d in _all_k8s() if "metadata" in d}
    for doc in patched:
        target = base[doc["kind"], doc["metadata"]["name"]]  # a patch of a base object
        if doc["kind"] == "ConfigMap":
            settings = _settings_from(
                _mnemos_env({**target["data"], **doc["data"]})
                | {"MNEMOS_STORE__POSTGRES_DSN": "postgresql://u:p@h/db"}
            )
            assert settings.store.backend == "postgres"
            continue
        pod, base_pod = doc["spec"]["template"]["spec"], target["spec"]["template"]["spec"]
        names = {c["name"] for c in _containers(base_pod)}
        for c in _containers({"containers": [], **pod}):
            assert c["name"] in names, c["name"]  # merged by name into a base container
            for var in c.get("env", []):
                if var.get("$patch") != "delete":
                    _check_names([var["name"]])
    # The setup-indexes step (MongoDB Atlas only) is dropped; every base container gets the DSN.
    job = next(d for d in patched if d["kind"] == "Job")
    dropped = [
        c["name"] for c in job["spec"]["template"]["spec"]["initContainers"] if c.get("$patch")
    ]
    assert dropped == ["setup-indexes"]
    with_dsn = {
        c["name"]
        for d in patched
        if d["kind"] != "ConfigMap"
        for c in _containers({"containers": [], **d["spec"]["template"]["spec"]})
        if any(v["name"] == "MNEMOS_STORE__POSTGRES_DSN" for v in c.get("env", []))
    }
    assert with_dsn == {c["name"] for _, p in _pod_specs() for c in _containers(p)} - {
        "setup-indexes"
    }
    server = next(d for d in _overlay() if d["kind"] == "StatefulSet")
    image = server["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith("pgvector/pgvector:pg")
    secrets = {d["metadata"]["name"]: d for d in _overlay() if d["kind"] == "Secret"}
    assert "MNEMOS_STORE__POSTGRES_DSN" in secrets["mnemos-secrets"]["stringData"]
    assert "secret.example.yaml" not in kustomization["resources"]
