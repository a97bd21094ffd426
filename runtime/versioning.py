"""Worker versioning with Temporal's worker deployments: rolling out new workflow code while runs
are in flight, without a run ever being replayed by code that cannot replay it.

A worker started with ``MNEMOS_TEMPORAL__BUILD_ID`` is version ``{deployment_name}.{build_id}`` of
the deployment ``MNEMOS_TEMPORAL__DEPLOYMENT_NAME``. The server sends new runs to the deployment's
*current* version only, so the workers of a new build can start, poll and be checked before any run
reaches them; making their version current (``promote``: at start with
``MNEMOS_TEMPORAL__PROMOTE_ON_START``, or ``temporal worker deployment set-current-version``) is the
switch, and making the old one current again is the rollback.

What happens to runs already going depends on ``MNEMOS_TEMPORAL__VERSIONING_BEHAVIOR``:

- ``auto_upgrade`` (default): a run moves to the current version at its next workflow task, so
  the new code replays its history: every workflow change must replay (``workflow.patched``,
  tests/workflows/test_replay.py). Old workers can stop as soon as the switch is made.
- ``pinned``: a run finishes on the version it started on; old workers must keep running until
  their version is drained (``temporal worker deployment describe-version``). For changes that
  cannot be patched.

Without a build id the worker is unversioned, as before: every worker of the queue takes any task
(a rolling restart then mixes old and new code on the same runs, which patching must cover).
"""

from __future__ import annotations

import asyncio
import time

from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import WorkerDeploymentConfig

from memory.errors import MnemosError
from memory.settings import TemporalSettings

_BEHAVIORS = {
    "auto_upgrade": VersioningBehavior.AUTO_UPGRADE,
    "pinned": VersioningBehavior.PINNED,
}
# A version exists for the server once one of its workers has polled: a promote right after the
# worker starts waits for that, briefly.
_NOT_YET = (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION)


class PromoteError(MnemosError):
    """The version could not be made current (no worker of it polled in time, or the server
    refused: e.g. it lacks a task queue the current version has)."""


def deployment_version(cfg: TemporalSettings) -> WorkerDeploymentVersion | None:
    if cfg.build_id is None:
        return None
    return WorkerDeploymentVersion(deployment_name=cfg.deployment_name, build_id=cfg.build_id)


def deployment_config(cfg: TemporalSettings) -> WorkerDeploymentConfig | None:
    """The worker's deployment options; None (unversioned) without a build id."""
    version = deployment_version(cfg)
    if version is None:
        return None
    return WorkerDeploymentConfig(
        version=version,
        use_worker_versioning=True,
        default_versioning_behavior=_BEHAVIORS[cfg.versioning_behavior],
    )


async def promote(client: Client, cfg: TemporalSettings, *, wait_seconds: float = 30.0) -> None:
    """Make this build the deployment's current version: new runs, and auto-upgrade runs at
    their next task, go to its workers from now on."""
    version = deployment_version(cfg)
    if version is None:
        raise PromoteError("no build id: set MNEMOS_TEMPORAL__BUILD_ID to version the workers")
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace,
        deployment_name=version.deployment_name,
        build_id=version.build_id,
        identity=client.identity,
    )
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            await client.workflow_service.set_worker_deployment_current_version(request)
            return
        except RPCError as e:
            if e.status not in _NOT_YET or time.monotonic() > deadline:
                raise PromoteError(f"making {version.to_canonical_string()} current: {e}") from e
        await asyncio.sleep(0.2)  # its workers have not polled yet


async def current_build_id(client: Client, deployment_name: str) -> str | None:
    """The build id of the deployment's current version (None: unversioned or no deployment)."""
    try:
        found = await client.workflow_service.describe_worker_deployment(
            DescribeWorkerDeploymentRequest(
                namespace=client.namespace, deployment_name=deployment_name
            )
        )
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    current = found.worker_deployment_info.routing_config.current_deployment_version
    return current.build_id or None
