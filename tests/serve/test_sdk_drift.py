"""The TypeScript client is generated from the OpenAPI document: the committed document and types
must be today's. After an API change: `make sdk-types`, then commit sdk/typescript."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memory.settings import Settings
from serve.app import openapi_document

SDK = Path(__file__).resolve().parents[2] / "sdk" / "typescript"
GENERATOR = SDK / "node_modules" / ".bin" / "openapi-typescript"


def test_the_committed_document_is_the_servers() -> None:
    committed = json.loads((SDK / "openapi.json").read_text(encoding="utf-8"))
    assert committed == openapi_document(Settings()), (
        "sdk/typescript/openapi.json is out of date: run `make sdk-types` and commit it"
    )


@pytest.mark.skipif(not GENERATOR.exists(), reason="npm packages of sdk/typescript not installed")
def test_the_committed_types_are_generated_from_it(tmp_path: Path) -> None:
    out = tmp_path / "schema.ts"
    subprocess.run(
        [str(GENERATOR), "openapi.json", "--default-non-nullable", "false", "-o", str(out)],
        cwd=SDK,
        check=True,
        capture_output=True,
    )
    assert out.read_text() == (SDK / "src" / "schema.ts").read_text(), (
        "sdk/typescript/src/schema.ts is out of date: run `make sdk-types` and commit it"
    )


def test_a_response_types_every_field_as_present_and_a_request_its_defaults_as_optional() -> None:
    """A generated client must not make a backend check for a field the server always sends
    (`fact.version` possibly undefined), nor make it send one the server defaults."""
    schemas = openapi_document(Settings())["components"]["schemas"]
    fact = schemas["Fact"]
    assert set(fact["required"]) == set(fact["properties"])  # version, history, said_at ...
    assert "said_at" in fact["required"] and "version" in fact["required"]
    summary = schemas["FormationSummary"]
    assert set(summary["required"]) == set(summary["properties"])
    # Requests: a search's top_k and a recording's trigger_formation may be left out.
    assert schemas["SearchRequest"]["required"] == ["queries"]
    assert schemas["RecordRequest"]["required"] == ["messages"]
    # Problems are sent without their empty fields (RFC 9457's optional members).
    assert "detail" not in schemas["Problem"]["required"]
