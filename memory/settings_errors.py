"""Settings that do not validate, said in one line that never holds a value: a setting's value
may be a secret (a key, a DSN's password), and pydantic's own message quotes the input."""

from __future__ import annotations

import json
import os
import re

from pydantic import ValidationError
from pydantic_settings import SettingsError

from memory.errors import MnemosError


class InvalidSettingsError(MnemosError):
    """The environment's MNEMOS_* settings do not validate. The message names fields and
    variables, never their values."""


def validation_line(err: ValidationError) -> str:
    """The first three errors as "where: what", without the input pydantic would quote."""
    parts = []
    for e in err.errors()[:3]:
        where = ".".join(str(p) for p in e["loc"]) or "input"
        parts.append(f"{where}: {e['msg']}")
    more = f" (+{err.error_count() - 3} more)" if err.error_count() > 3 else ""
    return "; ".join(parts) + more


def settings_error_line(err: SettingsError) -> str:
    """What pydantic-settings could not parse (a structured variable that is no JSON), by field and
    variable name. Never the value, which may be a secret: values of MNEMOS_* variables are cut
    out of the cause's message too."""
    match = re.search(r'field "([^"]+)"', str(err))
    field = match.group(1) if match else None
    variables = sorted(
        name
        for name in os.environ
        if field is not None
        and (
            name.upper() == f"MNEMOS_{field.upper()}"
            or name.upper().startswith(f"MNEMOS_{field.upper()}__")
        )
    )
    where = field or "environment"
    if variables:
        where += f" ({', '.join(variables)})"
    cause = err.__cause__
    if cause is None:
        return f"{where}: {err}"
    detail = str(cause)
    for name, value in os.environ.items():
        if name.upper().startswith("MNEMOS_") and len(value) >= 3:
            detail = detail.replace(value, "[redacted]")
    kind = "not valid JSON" if isinstance(cause, json.JSONDecodeError) else "cannot be parsed"
    return f"{where}: {kind} ({detail})"


def invalid_settings(err: ValidationError | SettingsError) -> InvalidSettingsError:
    line = validation_line(err) if isinstance(err, ValidationError) else settings_error_line(err)
    return InvalidSettingsError(f"invalid settings: {line}")
