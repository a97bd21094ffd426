"""The codec endpoint of Temporal's UI and CLI: POST /encode and /decode with ``{"payloads": [...]}``.

Operators who hold the key point the UI's "Remote Codec Endpoint" (or ``temporal --codec-endpoint``)
here and see decoded payloads in their browser; the Temporal server itself never sees the key.
It decrypts whatever it is sent, so it binds to loopback by default and can require a token;
without one it answers only requests addressed to its bound host or a loopback name.
"""

from __future__ import annotations

import hmac
from typing import Annotated
from urllib.parse import urlsplit

import typer
from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.middleware.cors import CORSMiddleware
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from memory.settings import CodecSettings, get_settings
from runtime.codec import AesGcmCodec, CodecError

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def _hostname(authority: str) -> str:
    """The host of a ``host[:port]`` (a bracketed IPv6 address too), lowercased."""
    try:
        return (urlsplit(f"//{authority}").hostname or "").lower()
    except ValueError:
        return ""


def codec_app(cfg: CodecSettings) -> FastAPI:
    """An ASGI app with /encode and /decode; mountable, e.g. ``app.mount("/codec", codec_app(cfg))``."""
    codec = AesGcmCodec.from_settings(cfg)
    if codec is None:
        raise ValueError("no codec key configured (MNEMOS_CODEC__KEY): nothing to decode")
    token = cfg.server_token.get_secret_value() if cfg.server_token else None

    app = FastAPI(title="mnemos codec", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=list(cfg.server_origins),
        allow_methods=["POST"],
        allow_headers=["content-type", "x-namespace", "authorization"],
        allow_credentials=True,
    )

    # Without a token, only a request to the bound address or a loopback name is answered: a page
    # that DNS-rebinds its own name to 127.0.0.1 would otherwise post here as its own origin
    # (a text/plain body needs no preflight) and read the decrypted answer.
    hosts = _LOOPBACK | {_hostname(cfg.server_bind)} | {h.lower() for h in cfg.server_hosts}

    async def payloads_in(request: Request) -> Payloads:
        if token is None and _hostname(request.headers.get("host", "")) not in hosts:
            raise HTTPException(status_code=421, detail="not a host this codec server answers")
        if token is not None:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                raise HTTPException(status_code=401, detail="missing or wrong bearer token")
        try:
            return json_format.Parse(await request.body(), Payloads())
        except json_format.ParseError as e:
            raise HTTPException(status_code=400, detail=f"not a Payloads JSON body: {e}") from e

    def payloads_out(payloads: list[Payload]) -> Response:
        body = json_format.MessageToJson(Payloads(payloads=payloads))
        return Response(content=body, media_type="application/json")

    @app.post("/encode")
    async def encode(request: Request) -> Response:
        payloads = await payloads_in(request)
        return payloads_out(list(await codec.encode(list(payloads.payloads))))

    @app.post("/decode")
    async def decode(request: Request) -> Response:
        payloads = await payloads_in(request)
        try:
            decoded = await codec.decode(list(payloads.payloads))
        except CodecError as e:
            raise HTTPException(status_code=422, detail=str(e)) from e
        return payloads_out(list(decoded))

    return app


def codec_server(
    bind: Annotated[
        str | None, typer.Option(help="host:port to listen on (default: codec.server_bind)")
    ] = None,
) -> None:
    """Serve /encode and /decode for the Temporal UI (set it as the UI's Remote Codec Endpoint)."""
    import uvicorn

    cfg = get_settings().codec
    if bind is not None:  # the address it answers for too
        cfg = cfg.model_copy(update={"server_bind": bind})
    try:
        app = codec_app(cfg)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from e
    host, _, port = cfg.server_bind.rpartition(":")
    typer.echo(f"codec endpoint on http://{host}:{port} (origins: {', '.join(cfg.server_origins)})")
    uvicorn.run(app, host=host, port=int(port), log_level="warning")
