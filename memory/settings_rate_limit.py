"""The ``rate_limit`` group of the settings (``MNEMOS_RATE_LIMIT__*``): each API key's budgets in
``mnemos serve`` (serve/rate_limit.py), in its own module to keep settings.py readable.

A token bucket per key and kind of operation: ``rate`` requests per second refill it, up to
``burst`` at once. The defaults are far above what one agent backend asks for (a turn costs one
write and one to three reads) and above what one server process answers on two cores; they exist
to stop a runaway loop on one key from starving the other keys, not to meter ordinary traffic.
Budgets are per server process: N replicas admit up to N times as much (docs/http_api.md).
"""

from __future__ import annotations

from pydantic import Field

from memory.settings_group import SettingsGroup


class RateLimitSettings(SettingsGroup):
    enabled: bool = Field(
        True, description="Limit each API key's requests (429 with Retry-After beyond its budget)"
    )
    read_per_second: float = Field(
        200,
        gt=0,
        description="Reads per second per key and server process: context, search, session start, listings, stats",
    )
    read_burst: int = Field(400, ge=1, description="Reads a key may make at once (bucket size)")
    write_per_second: float = Field(
        100,
        gt=0,
        description="Writes per second per key and server process: record messages, form, session end, edits, deletes",
    )
    write_burst: int = Field(200, ge=1, description="Writes a key may make at once (bucket size)")
    heavy_per_second: float = Field(
        1,
        gt=0,
        description="Heavy operations per second per key and server process: erasing a user (every memory of them, "
        "and their workflow executions)",
    )
    heavy_burst: int = Field(
        30, ge=1, description="Heavy operations a key may make at once (bucket size)"
    )
