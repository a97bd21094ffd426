"""The codec endpoint of Temporal's UI and CLI: POST /encode and /decode with ``{"payloads": [...]}``.

Operators who hold the key point the UI's "Remote Codec Endpoint" (or ``temporal --codec-endpoint``)
here and see decoded payloads in their browser; the Temporal server itself never sees the key.
It decrypts whatever it is sent, so it binds to loopback by default and can require a token;
without one it answers only requests addressed to its bound host or a loopback name.
"""

from __future__ import annotations

import hmac
from typing import Annotated

import typer
from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.middleware.cors import CORSMiddleware
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from memory.settings import CodecSettings, get_settings
from memory.settings_codec import authority_host
from runtime.codec import AesGcmCodec, CodecError
from runtime.command_line import fail

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


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
    # The bind and the listed names are parsed as a Host header is parsed below (a bad one raises
    # ValueError here, before anything listens), and a Host that does not parse is None, never in
    # this set: a bad header is refused, not let in.
    hosts = _LOOPBACK | {cfg.bind_address[0]} | cfg.listed_hosts

    async def payloads_in(request: Request) -> Payloads:
        if token is None and authority_host(request.headers.get("host", "")) not in hosts:
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


def _bind_of(cfg: CodecSettings, *, from_flag: bool) -> tuple[str, int]:
    """``cfg``'s bind as uvicorn takes it, or the one-line error naming where it was set: the
    settings keep it as given, so this command is where a bad one is refused (review H161)."""
    try:
        return cfg.bind_address
    except ValueError as e:
        if from_flag:
            raise typer.BadParameter(str(e), param_hint="--bind") from e
        fail(f"MNEMOS_CODEC__SERVER_BIND: {e}")  # a setting, not this command's usage


def _check_hosts(cfg: CodecSettings) -> frozenset[str]:
    """The listed hosts, or a one-line error naming one that is no host, before anything listens."""
    try:
        return cfg.listed_hosts
    except ValueError as e:
        fail(f"MNEMOS_CODEC__SERVER_HOSTS: {e}")


def codec_server(
    bind: Annotated[
        str | None,
        typer.Option(help="host:port or [IPv6]:port to listen on (default: codec.server_bind)"),
    ] = None,
) -> None:
    """Serve /encode and /decode for the Temporal UI (set it as the UI's Remote Codec Endpoint)."""
    import uvicorn

    cfg = get_settings().codec
    if bind is not None:
        cfg = cfg.model_copy(update={"server_bind": bind})
    host, port = _bind_of(
        cfg, from_flag=bind is not None
    )  # uvicorn takes IPv6 without its brackets
    _check_hosts(cfg)
    try:
        app = codec_app(cfg)
    except ValueError as e:
        fail(str(e))  # no key: what the README's CLI contract says a setting's error is
    origins = ", ".join(cfg.server_origins)
    typer.echo(f"codec endpoint on http://{cfg.server_bind} (origins: {origins})")
    uvicorn.run(app, host=host, port=port, log_level="warning")
