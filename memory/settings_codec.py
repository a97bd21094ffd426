"""The ``codec`` group of the settings (``MNEMOS_CODEC__*``): encryption of Temporal payloads, in its
own module because its key handling is more than a list of numbers."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Self

from pydantic import Field, SecretStr, model_validator

from memory.settings_group import SettingsGroup

_KEY_ID = r"^[A-Za-z0-9_.\-]{1,64}$"


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
        pattern=r"^\S+:\d{1,5}$",
        description="host:port of `mnemos codec-server` (it decrypts: keep it private)",
    )
    server_origins: tuple[str, ...] = Field(
        ("http://127.0.0.1:8233", "http://localhost:8233"),
        description="Browser origins (the Temporal UI, JSON list) allowed to call the codec server",
    )
    server_hosts: tuple[str, ...] = Field(
        (),
        description="Host names the codec server answers without a token, besides its bind host "
        "and loopback (the name a remote Temporal UI calls it by, JSON list)",
    )
    server_token: SecretStr | None = Field(
        None, description="If set, the codec server requires 'Authorization: Bearer <token>'"
    )

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
