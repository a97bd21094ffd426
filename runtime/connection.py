"""Connecting to Temporal the way every mnemos process must: pydantic payloads, our search
attributes.

Where and how to connect (precedence, highest first):

1. ``MNEMOS_TEMPORAL__ADDRESS`` / ``MNEMOS_TEMPORAL__NAMESPACE``, when set;
2. Temporal's environment configuration (``temporalio.envconfig``): ``TEMPORAL_ADDRESS``,
   ``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, ``TEMPORAL_TLS*``, ``TEMPORAL_GRPC_META_*``, over
   the profile ``TEMPORAL_PROFILE`` (default "default") of ``TEMPORAL_CONFIG_FILE`` (default
   ``~/.config/temporalio/temporal.toml``). API keys and TLS (Temporal Cloud) come only from here;
3. mnemos' defaults (``127.0.0.1:7233``, namespace ``default``).

The local stack of ``mnemos up`` connects with ``local=True``: to the dev server it started, from
the mnemos settings only, whatever a shell says about another cluster.
"""

from __future__ import annotations

from collections.abc import Mapping

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.envconfig import ClientConfigProfile, ClientConnectConfig
from temporalio.service import RPCStatusCode

from memory.errors import InvalidInputError
from memory.settings import CodecSettings, TemporalSettings
from runtime import tracing
from runtime.codec import data_converter
from runtime.payloads import payload_data_converter
from workflows.naming import ALL_KEYS

# Temporal unreachable for now, which the same call may get past later: down or restarting
# (UNAVAILABLE), overloaded (RESOURCE_EXHAUSTED), or hung, which the client's own RPC timeout
# reports as DEADLINE_EXCEEDED or CANCELLED "Timeout expired". Any other RPC error (an unknown
# namespace, a refused permission) is the deployment's to mend.
TEMPORAL_TRANSIENT = frozenset(
    {
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.CANCELLED,
        RPCStatusCode.RESOURCE_EXHAUSTED,
    }
)


class TemporalConfigError(InvalidInputError):
    """Temporal's environment configuration cannot be read (a missing profile, a bad TOML file)."""


def connect_config(
    cfg: TemporalSettings, *, env: Mapping[str, str] | None = None, local: bool = False
) -> ClientConnectConfig:
    """The ``Client.connect`` arguments of these settings under the precedence above. ``env``
    replaces the process environment (tests); ``local`` ignores Temporal's configuration."""
    if local:
        return {"target_host": cfg.address, "namespace": cfg.namespace}
    try:
        config = ClientConfigProfile.load(override_env_vars=env).to_client_connect_config()
    except RuntimeError as e:  # the SDK's ConfigError
        raise TemporalConfigError(f"Temporal environment configuration: {e}") from e
    explicit = cfg.model_fields_set
    if "address" in explicit or "target_host" not in config:
        config["target_host"] = cfg.address
    if "namespace" in explicit or "namespace" not in config:
        config["namespace"] = cfg.namespace
    return config


async def connect(
    cfg: TemporalSettings, *, codec: CodecSettings | None = None, local: bool = False
) -> Client:
    """A client whose payloads are encrypted when ``codec`` holds a key (runtime.codec), traced
    when tracing is on (runtime.tracing); workers built on it inherit both."""
    converter = payload_data_converter if codec is None else data_converter(codec)
    return await Client.connect(
        **connect_config(cfg, local=local),
        data_converter=converter,
        interceptors=tracing.interceptors(),
    )


async def ensure_search_attributes(client: Client) -> list[str]:
    """Register the Mnemos* keyword attributes missing in the client's namespace. Idempotent;
    returns those added."""
    existing = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    missing = {
        k.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
        for k in ALL_KEYS
        if k.name not in existing.custom_attributes
    }
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=client.namespace, search_attributes=missing)
        )
    return sorted(missing)
