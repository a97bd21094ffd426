"""Encrypted payloads: what an operator relies on when they set MNEMOS_CODEC__KEY."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from memory.models import ScopeKey
from memory.settings import CodecSettings, Settings
from runtime.codec import ENCODING, KEY_ID, AesGcmCodec, CodecError, data_converter
from runtime.payloads import payload_data_converter
from tests.harness import Harness, conversation, facts
from worker import WORKFLOWS


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


SECRET = "Alice's passport number is X1234567"


async def encode(cfg: CodecSettings, value: object) -> Payload:
    [payload] = await data_converter(cfg).encode([value])
    return payload


async def decode(cfg: CodecSettings, payload: Payload, as_type: type = str) -> object:
    [value] = await data_converter(cfg).decode([payload], [as_type])
    return value


async def test_round_trip_hides_the_text_and_names_the_key() -> None:
    cfg = CodecSettings(key=new_key(), key_id="2026-11")
    value = ScopeKey(scope="user", agent_id="eve", user_id="alice-" + SECRET.split()[-1])
    payload = await encode(cfg, value)
    assert payload.metadata["encoding"] == ENCODING
    assert payload.metadata[KEY_ID] == b"2026-11"
    assert b"X1234567" not in payload.SerializeToString()
    assert await decode(cfg, payload, ScopeKey) == value


async def test_without_a_key_payloads_stay_plain_json() -> None:
    assert data_converter(CodecSettings()) is payload_data_converter
    payload = await encode(CodecSettings(), SECRET)
    assert payload.metadata["encoding"] == b"json/plain"
    # and a keyed reader still reads what was written before encryption was turned on
    assert await AesGcmCodec({"k1": os.urandom(32)}, "k1").decode([payload]) == [payload]


async def test_a_wrong_key_under_the_same_id_fails_clearly() -> None:
    payload = await encode(CodecSettings(key=new_key(), key_id="k1"), SECRET)
    with pytest.raises(CodecError, match="failed authentication"):
        await decode(CodecSettings(key=new_key(), key_id="k1"), payload)


async def test_an_unknown_key_id_fails_naming_it() -> None:
    payload = await encode(CodecSettings(key=new_key(), key_id="old"), SECRET)
    with pytest.raises(CodecError, match=r"key 'old'.*PREVIOUS_KEYS"):
        await decode(CodecSettings(key=new_key(), key_id="new"), payload)


async def test_rotation_old_key_decrypts_new_key_encrypts() -> None:
    old, new = new_key(), new_key()
    before = await encode(CodecSettings(key=old, key_id="k0"), SECRET)
    rotated = CodecSettings(key=new, key_id="k1", previous_keys={"k0": old})
    assert await decode(rotated, before) == SECRET
    after = await encode(rotated, SECRET)
    assert after.metadata[KEY_ID] == b"k1"
    # the old key alone can no longer read new payloads
    with pytest.raises(CodecError):
        await decode(CodecSettings(key=old, key_id="k0"), after)


async def test_decrypt_only_mode_writes_plain_but_reads_encrypted() -> None:
    key = new_key()
    sealed = await encode(CodecSettings(key=key), SECRET)
    off = CodecSettings(key=key, encrypt=False)
    assert (await encode(off, SECRET)).metadata["encoding"] == b"json/plain"
    assert await decode(off, sealed) == SECRET


async def test_a_truncated_ciphertext_fails_as_corrupt() -> None:
    cfg = CodecSettings(key=new_key())
    payload = await encode(cfg, SECRET)
    cut = Payload(metadata=payload.metadata, data=payload.data[:5])
    with pytest.raises(CodecError, match="corrupt"):
        await decode(cfg, cut)


def test_malformed_keys_are_rejected_at_start_up() -> None:
    with pytest.raises(ValidationError, match="not valid base64"):
        CodecSettings(key="not base64!")
    with pytest.raises(ValidationError, match="16 bytes; AES-256 needs 32"):
        CodecSettings(key=base64.b64encode(os.urandom(16)).decode())
    with pytest.raises(ValidationError, match=r"also in codec\.previous_keys"):
        CodecSettings(key=new_key(), key_id="k1", previous_keys={"k1": new_key()})
    with pytest.raises(ValidationError, match="not a valid key id"):
        CodecSettings(previous_keys={"bad id!": new_key()})


def test_keys_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    key, old = new_key(), new_key()
    monkeypatch.setenv("MNEMOS_CODEC__KEY", key)
    monkeypatch.setenv("MNEMOS_CODEC__KEY_ID", "k2")
    monkeypatch.setenv("MNEMOS_CODEC__PREVIOUS_KEYS", f'{{"k1": "{old}"}}')
    ring = Settings().codec.keyring()
    assert ring == {"k1": base64.b64decode(old), "k2": base64.b64decode(key)}


async def raw_history(client: Client, workflow_id: str) -> bytes:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return b"".join(event.SerializeToString() for event in history.events)


# The failing plain replay below logs its decoding error with a rich traceback, whose modules load
# lazily while the workflow sandbox is active; the sandbox's notice about that is expected here.
@pytest.mark.filterwarnings("ignore:Module .* was imported after initial workflow load")
async def test_a_formation_history_holds_no_plaintext_with_the_codec_on(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("plain", conversation(4, prefix="p"))
    await h.record("sealed", conversation(4, prefix="s"))

    # Control: without a key, an extracted fact is in the history in clear.
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics", "user")))
    async with h.worker():
        plain = await h.start("plain")
        await plain.result()
    plain_bytes = await raw_history(h.client, plain.id)
    assert b"Acme Robotics" in plain_bytes

    config = time_env.client.config()
    converter = data_converter(CodecSettings(key=new_key()))
    config["data_converter"] = converter
    h.client = Client(**config)
    h.llm.script("extract_facts", facts((SECRET, "user")))
    async with h.worker():
        sealed = await h.start("sealed")
        summary = await sealed.result()
    assert summary.facts_added == 1
    assert SECRET in {f.content for f in await h.all_facts()}
    sealed_bytes = await raw_history(time_env.client, sealed.id)
    for text in (b"X1234567", b"passport"):
        assert text not in sealed_bytes
    assert ENCODING in sealed_bytes

    # The encrypted history replays with the key (replay tests, `mnemos replay`), not without.
    history = await time_env.client.get_workflow_handle(sealed.id).fetch_history()
    await Replayer(workflows=list(WORKFLOWS), data_converter=converter).replay_workflow(history)
    plain_replayer = Replayer(workflows=list(WORKFLOWS), data_converter=payload_data_converter)
    with pytest.raises(RuntimeError, match="Failed decoding arguments"):
        await plain_replayer.replay_workflow(history)
