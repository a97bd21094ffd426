"""Connecting to Temporal the way every mnemos process must: pydantic payloads, our search attributes."""

from __future__ import annotations

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from memory.settings import TemporalSettings
from workflows.naming import ALL_KEYS


async def connect(cfg: TemporalSettings) -> Client:
    return await Client.connect(
        cfg.address, namespace=cfg.namespace, data_converter=pydantic_data_converter
    )


async def ensure_search_attributes(client: Client, namespace: str) -> list[str]:
    """Register the Mnemos* keyword attributes that are missing. Idempotent; returns those added."""
    existing = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    missing = {
        k.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
        for k in ALL_KEYS
        if k.name not in existing.custom_attributes
    }
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=missing)
        )
    return sorted(missing)
