"""``python -m serve openapi``: print the OpenAPI document (for generated clients: sdk/typescript)."""

from __future__ import annotations

import json
import sys

from serve.app import openapi_document


def main(argv: list[str]) -> None:
    if argv != ["openapi"]:
        raise SystemExit("usage: python -m serve openapi > openapi.json")
    sys.stdout.write(json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
