"""Settings that do not validate, said in one line that never holds a value: a setting's value
may be a secret (a key, a DSN's password), and pydantic's own message quotes the input."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
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


def misspelt_variable(environ: Mapping[str, str], fields: Mapping[str, FieldInfo]) -> str | None:
    """A variable that names a setting with a single underscore for the double one
    (MNEMOS_STORE_BACKEND), or a top-level one spelt without its underscore (MNEMOS_LOGLEVEL):
    pydantic-settings ignores an unknown top-level name, and the process would run on the
    defaults (SQLite in the pod). Other MNEMOS_* names are left alone: a backend keeps its own
    (MNEMOS_URL, MNEMOS_API_KEY) beside ours."""
    for name in environ:
        if not name.upper().startswith("MNEMOS_"):
            continue
        rest = name[len("MNEMOS_") :].lower()
        if "__" in rest or rest in fields:
            continue
        meant = _meant(rest, fields)
        if meant is not None:
            return f"invalid settings: {name} is not read: did you mean MNEMOS_{meant.upper()}?"
    return None


def _meant(rest: str, fields: Mapping[str, FieldInfo]) -> str | None:
    """The setting ``rest`` (a variable's name after MNEMOS_, lowercased) was meant to be."""
    for group, field in fields.items():
        sub = field.annotation
        leaf = rest.removeprefix(f"{group}_")
        nested = isinstance(sub, type) and issubclass(sub, BaseModel)
        if leaf != rest and nested and leaf in sub.model_fields:  # type: ignore[union-attr]
            return f"{group}__{leaf}"
        if rest.replace("_", "") == group.replace("_", ""):
            return group
    return None
