"""`mnemos keys create|list|revoke` (the Typer sub-app) on a keys file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from serve.commands import keys_app
from serve.keys import JsonFileKeyStore


def test_create_list_revoke(tmp_path: Path) -> None:
    path = tmp_path / "api_keys.json"
    runner = CliRunner()
    opts = ["--keys-file", str(path)]
    created = runner.invoke(keys_app, ["create", "-a", "eve", "-a", "bob", "--read-only", *opts])
    assert created.exit_code == 0, created.output
    token = created.stdout.strip().splitlines()[-1]
    assert token.startswith("mk_")
    key = asyncio.run(JsonFileKeyStore(path).verify(token))
    assert key is not None and key.agent_ids == ("eve", "bob") and key.read_only

    listed = runner.invoke(keys_app, ["list", "--json", *opts])
    rows = json.loads(listed.stdout)
    assert [r["key_id"] for r in rows] == [key.key_id]
    assert "secret_sha256" not in rows[0] and token not in listed.stdout

    revoked = runner.invoke(keys_app, ["revoke", key.key_id, *opts])
    assert revoked.exit_code == 0 and "revoked" in revoked.stdout
    assert asyncio.run(JsonFileKeyStore(path).verify(token)) is None
    unknown = runner.invoke(keys_app, ["revoke", "nope", *opts])
    assert unknown.exit_code == 1

    bad = runner.invoke(keys_app, ["create", "-a", "not an id", *opts])
    assert bad.exit_code != 0 and "agent_ids" in bad.output
