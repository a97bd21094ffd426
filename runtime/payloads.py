"""The payload converter every mnemos client and worker shares: pydantic JSON, read tolerantly.

Workflow and activity inputs are pydantic models that forbid unknown fields (a typo in code or
in an API request is an error). Read from a payload, though, an unknown field is a field added
by another build: a backend upgraded before the workers, a schedule whose input a newer worker
wrote, a rollback. Temporal cannot fail a workflow on a payload it cannot decode; it retries the
workflow task forever, the run stays Running, every later trigger of the session is a signal
into it and the cold-sessions schedule skips behind it. So payloads are decoded ignoring fields
this build does not know (a tolerant reader, as protobuf readers are), and written as before.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    JSONPlainPayloadConverter,
)


@functools.lru_cache(maxsize=1024)
def _adapter(type_hint: Any) -> TypeAdapter[Any]:
    return TypeAdapter(type_hint)


class TolerantJSONPayloadConverter(PydanticJSONPlainPayloadConverter):
    """pydantic's JSON converter, validating with ``extra="ignore"`` (every nested model too)."""

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        hint: Any = type_hint if type_hint is not None else Any
        try:
            adapter = _adapter(hint)
        except TypeError:  # an unhashable hint: not cached
            adapter = TypeAdapter(hint)
        return adapter.validate_json(payload.data, extra="ignore")


class TolerantPayloadConverter(CompositePayloadConverter):
    """Temporal's default converters, JSON replaced by the tolerant pydantic one."""

    def __init__(self) -> None:
        json = TolerantJSONPayloadConverter()
        super().__init__(
            *(
                json if isinstance(c, JSONPlainPayloadConverter) else c
                for c in DefaultPayloadConverter.default_encoding_payload_converters
            )
        )


payload_data_converter = DataConverter(payload_converter_class=TolerantPayloadConverter)
