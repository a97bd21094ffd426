"""Encrypted Temporal payloads: AES-256-GCM over each serialized payload, key id in the clear.

Without it, every activity input and result (message texts, extracted facts, decisions,
reflections) sits readable in the workflow history for the namespace's retention period. With a
key configured, the server only ever stores ciphertext. The wire format is the one of Temporal's
encryption samples (12-byte nonce + ciphertext, metadata ``encoding: binary/encrypted`` and
``encryption-key-id``), so any of their codec servers can decode mnemos payloads too.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    PayloadCodec,
)

from memory.settings import CodecSettings
from runtime.payloads import payload_data_converter

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
_NONCE_BYTES = 12


class CodecError(ValueError):
    """A payload that cannot be decrypted with the configured keys."""


class AesGcmCodec(PayloadCodec):
    """Encrypts with the active key; decrypts with whichever configured key the payload names."""

    def __init__(
        self, keys: Mapping[str, bytes], active_key_id: str | None, *, encrypt: bool = True
    ) -> None:
        if active_key_id is not None and active_key_id not in keys:
            raise ValueError(f"active key {active_key_id!r} is not among the configured keys")
        self._ciphers = {key_id: AESGCM(key) for key_id, key in keys.items()}
        self._active = active_key_id if encrypt else None

    @classmethod
    def from_settings(cls, cfg: CodecSettings) -> AesGcmCodec | None:
        """None when no key at all is configured (payloads stay plain)."""
        keys = cfg.keyring()
        if not keys:
            return None
        return cls(keys, cfg.key_id if cfg.key is not None else None, encrypt=cfg.encrypt)

    @property
    def active_key_id(self) -> str | None:
        return self._active

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]

    def encrypt(self, payload: Payload) -> Payload:
        if self._active is None:
            return payload
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._ciphers[self._active].encrypt(nonce, payload.SerializeToString(), None)
        return Payload(
            metadata={"encoding": ENCODING, KEY_ID: self._active.encode()},
            data=nonce + sealed,
        )

    def decrypt(self, payload: Payload) -> Payload:
        # Payloads written before encryption was turned on stay readable (and replayable).
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        key_id = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            known = ", ".join(sorted(self._ciphers)) or "none"
            raise CodecError(
                f"payload was encrypted with key {key_id!r}, which is not configured "
                f"(configured: {known}); add it to MNEMOS_CODEC__PREVIOUS_KEYS"
            )
        data = payload.data
        try:
            if len(data) <= _NONCE_BYTES:
                raise InvalidTag
            plain = cipher.decrypt(data[:_NONCE_BYTES], data[_NONCE_BYTES:], None)
        except InvalidTag as e:
            raise CodecError(
                f"payload encrypted with key id {key_id!r} failed authentication: the key "
                "configured under that id is not the one that encrypted it, or the data is corrupt"
            ) from e
        return Payload.FromString(plain)


def data_converter(cfg: CodecSettings) -> DataConverter:
    """The converter every mnemos client and worker must share: pydantic payloads, encrypted when
    a key is configured. Failure messages and stack traces then go through the codec as well
    (they can quote personal text)."""
    codec = AesGcmCodec.from_settings(cfg)
    if codec is None:
        return payload_data_converter
    return dataclasses.replace(
        payload_data_converter,
        payload_codec=codec,
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )
