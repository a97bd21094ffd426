"""The ``codec`` group of the settings (``MNEMOS_CODEC__*``): encryption of Temporal payloads, in its
own module because its key handling is more than a list of numbers."""

from __future__ import annotations

import base64
import binascii
import contextlib
import ipaddress
import re
from typing import Self

from pydantic import Field, SecretStr, model_validator

from memory.settings_group import SettingsGroup

_KEY_ID = r"^[A-Za-z0-9_.\-]{1,64}$"

# What a Host header holds: a name or IPv4 address, or an IPv6 address in brackets, then maybe a
# port. A name has no colon, so an unbracketed IPv6 address (whose last group reads like a port)
# never parses: `fd00::5:8081` is refused rather than guessed at.
_AUTHORITY = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::(?P<port>\d{1,5}))?"
)


def parse_authority(authority: str) -> tuple[str, int | None] | None:
    """``(host, port)`` of ``host``, ``host:port``, ``[v6]`` or ``[v6]:port`` (the Host header's
    forms): host lowercased, IPv6 without brackets and in its short form, so one address written
    two ways compares equal. None if it is none of these."""
    match = _AUTHORITY.fullmatch(authority)
    if match is None:
        return None
    port = int(match["port"]) if match["port"] else None
    if match["name"]:
        return match["name"].lower(), port
    try:
        return str(ipaddress.IPv6Address(match["v6"])), port
    except ValueError:
        return None


def authority_host(authority: str) -> str | None:
    """The host of a Host header (see `parse_authority`); None if it does not parse."""
    parsed = parse_authority(authority)
    return parsed[0] if parsed else None


def _listed_host(entry: str) -> str:
    """A ``server_hosts`` entry as `authority_host` reads a Host header; a bare IPv6 address is
    taken whole (a list of hosts has no port to confuse its last group with)."""
    with contextlib.suppress(ValueError):
        return str(ipaddress.IPv6Address(entry))
    host = authority_host(entry)
    if host is None:
        raise ValueError(f"{entry!r} is not a host, host:port, [IPv6] or [IPv6]:port")
    return host


def _bind_address(bind: str) -> tuple[str, int]:
    """``(host, port)`` of a ``server_bind``; ValueError saying which form it should take."""
    parsed = parse_authority(bind)
    port = parsed[1] if parsed else None
    if parsed is None or port is None:
        # `fd00::5:8081` could be port 8081 of fd00::5 or the address fd00::5:8081 on no port
        v6 = (
            " (an IPv6 address goes in brackets, e.g. [fd00::5]:8081)"
            if bind.count(":") > 1
            else ""
        )
        raise ValueError(f"{bind!r} is not host:port or [IPv6]:port{v6}")
    if not 0 < port < 65536:
        raise ValueError(f"{bind!r}: port {port} is not in 1-65535")
    return parsed[0], port


class CodecSettings(SettingsGroup):
    """Encryption of Temporal payloads (activity inputs/results, workflow arguments): AES-256-GCM,
    on when a key is set. Rotation: put the old key under ``previous_keys`` and set a new
    ``key``/``key_id``; histories written with the old key still decode."""

    key: SecretStr | None = Field(
        None, description="Active AES-256 key, base64 of 32 random bytes (None: no encryption)"
    )
    key_id: str = Field(
        "k1",
        pattern=_KEY_ID,
        description="Id of the active key, stored in clear in each payload's metadata",
    )
    previous_keys: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Older keys by id (JSON object), accepted for decryption only",
    )
    encrypt: bool = Field(
        True, description="Encrypt new payloads when a key is set (false: decrypt only)"
    )
    server_bind: str = Field(
        "127.0.0.1:8081",
        description="host:port of `mnemos codec-server`, [v6]:port for IPv6 (it decrypts: keep it "
        "private)",
    )
    server_origins: tuple[str, ...] = Field(
        ("http://127.0.0.1:8233", "http://localhost:8233"),
        description="Browser origins (the Temporal UI, JSON list) allowed to call the codec server",
    )
    server_hosts: tuple[str, ...] = Field(
        (),
        description="Host names the codec server answers without a token, besides its bind host "
        "and loopback (the name a remote Temporal UI calls it by, JSON list; host, host:port or "
        "[v6] as in a Host header, the port ignored)",
    )
    server_token: SecretStr | None = Field(
        None, description="If set, the codec server requires 'Authorization: Bearer <token>'"
    )

    # `server_bind` and `server_hosts` are kept as given and read only by `mnemos codec-server`
    # (via these two): checked at load, a value only that command uses would stop the worker,
    # serve and every CLI command sharing the environment (review H161).
    @property
    def bind_address(self) -> tuple[str, int]:
        """``(host, port)`` of ``server_bind`` as a socket takes it (IPv6 without brackets);
        ValueError saying which form it should take."""
        return _bind_address(self.server_bind)

    @property
    def listed_hosts(self) -> frozenset[str]:
        """``server_hosts`` as `authority_host` reads a Host header; ValueError naming an entry
        that is no host."""
        return frozenset(_listed_host(entry) for entry in self.server_hosts)

    @model_validator(mode="after")
    def _keys_are_aes256(self) -> Self:
        if self.key is not None and self.key_id in self.previous_keys:
            raise ValueError(f"codec.key_id {self.key_id!r} is also in codec.previous_keys")
        for key_id in self.previous_keys:
            if not re.fullmatch(_KEY_ID, key_id):
                raise ValueError(f"codec.previous_keys: {key_id!r} is not a valid key id")
        self.keyring()
        return self

    def keyring(self) -> dict[str, bytes]:
        """Every configured key by id, decoded; raises ValueError naming a malformed one."""
        named = dict(self.previous_keys)
        if self.key is not None:
            named[self.key_id] = self.key
        ring = {}
        for key_id, secret in named.items():
            try:
                raw = base64.b64decode(secret.get_secret_value(), validate=True)
            except binascii.Error as e:
                raise ValueError(f"codec key {key_id!r} is not valid base64") from e
            if len(raw) != 32:
                raise ValueError(
                    f"codec key {key_id!r} decodes to {len(raw)} bytes; AES-256 needs 32"
                    " (e.g. `openssl rand -base64 32`)"
                )
            ring[key_id] = raw
        return ring
