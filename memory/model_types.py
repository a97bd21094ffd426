"""The vocabulary the models of memory.models are written in: ids, scopes, timestamps.

Split from memory/models.py (which re-exports these names) to keep that file readable."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints

from memory.input_rules import not_a_number

# Ids are opaque strings chosen by the agent backend; we only insist they are safe to put in a
# Temporal workflow id, a log line and a database key.
Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")]
Role = Literal["user", "agent", "tool", "system", "other"]
FactScope = Literal["user", "agent"]


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware (UTC)")
    return value


UtcDatetime = Annotated[datetime, AfterValidator(_utc)]
# A clock's offset from UTC in minutes, as a datetime can hold it (strictly within a day).
UtcOffsetMinutes = Annotated[int, Field(ge=-1439, le=1439)]


# A timestamp that comes in: what the schema says (a date-time string), or a datetime in Python.
InputDatetime = Annotated[UtcDatetime, BeforeValidator(not_a_number)]
