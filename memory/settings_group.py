"""The base of every settings group (``MNEMOS_<GROUP>__*``): unknown fields refused (a typo fails
at start-up instead of being ignored), immutable, and errors that never quote the value given (a
group may hold a key or a password)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SettingsGroup(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)
