"""The codec endpoint as the Temporal UI calls it: Payloads JSON in and out, CORS, optional token."""

from __future__ import annotations

import base64
import json
import os
from typing import cast

import httpx2
import pytest
import typer
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from typer.testing import CliRunner, Result

from memory.settings import CodecSettings, get_settings, read_settings
from runtime.codec import data_converter
from runtime.codec_server import codec_app, codec_server
from runtime.payloads import payload_data_converter

UI = "http://127.0.0.1:8233"


def settings(**kw: object) -> CodecSettings:
    return CodecSettings(key=base64.b64encode(os.urandom(32)).decode(), **kw)


def client(cfg: CodecSettings) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=codec_app(cfg)), base_url="http://127.0.0.1:8081"
    )


async def sealed_body(cfg: CodecSettings, value: object) -> str:
    payloads = await data_converter(cfg).encode([value])
    return json_format.MessageToJson(Payloads(payloads=payloads))


async def test_decode_returns_the_plain_payload_the_ui_shows() -> None:
    cfg = settings()
    async with client(cfg) as http:
        r = await http.post(
            "/decode",
            content=await sealed_body(cfg, "Alice's passport is X1234567"),
            headers={"content-type": "application/json", "x-namespace": "default", "origin": UI},
        )
    assert r.status_code == 200
    assert r.headers["access-control-allow-origin"] == UI
    [payload] = json_format.Parse(r.content, Payloads()).payloads
    assert payload.metadata["encoding"] == b"json/plain"
    assert await payload_data_converter.decode([payload], [str]) == ["Alice's passport is X1234567"]
    # the JSON shape is the protocol's: {"payloads": [{"metadata": {...}, "data": "<base64>"}]}
    assert set(json.loads(r.content)) == {"payloads"}


async def test_encode_then_decode_round_trips() -> None:
    cfg = settings()
    plain = json_format.MessageToJson(
        Payloads(payloads=await payload_data_converter.encode(["hello"]))
    )
    async with client(cfg) as http:
        sealed = await http.post("/encode", content=plain)
        assert b"hello" not in base64.b64decode(json.loads(sealed.content)["payloads"][0]["data"])
        back = await http.post("/decode", content=sealed.content)
    assert json.loads(back.content) == json.loads(plain)


async def test_cors_preflight_allows_only_the_ui_origin() -> None:
    async with client(settings()) as http:
        ok = await http.options(
            "/decode",
            headers={
                "origin": UI,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type,x-namespace",
            },
        )
        other = await http.options(
            "/decode",
            headers={"origin": "http://evil.example", "access-control-request-method": "POST"},
        )
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == UI
    assert "access-control-allow-origin" not in other.headers


async def test_a_configured_token_is_required() -> None:
    cfg = settings(server_token="s3cret")
    body = await sealed_body(cfg, "x")
    async with client(cfg) as http:
        assert (await http.post("/decode", content=body)).status_code == 401
        wrong = await http.post("/decode", content=body, headers={"authorization": "Bearer no"})
        assert wrong.status_code == 401
        right = await http.post("/decode", content=body, headers={"authorization": "Bearer s3cret"})
        assert right.status_code == 200


async def test_bad_input_and_foreign_keys_are_client_errors() -> None:
    async with client(settings()) as http:
        assert (await http.post("/decode", content=b"not json")).status_code == 400
        foreign = await sealed_body(settings(key_id="other"), "x")
        r = await http.post("/decode", content=foreign)
    assert r.status_code == 422 and "'other'" in r.json()["detail"]


def test_no_key_no_server() -> None:
    with pytest.raises(ValueError, match="MNEMOS_CODEC__KEY"):
        codec_app(CodecSettings())


@pytest.mark.parametrize("host", ["rebind.attacker.example:8081", "127.0.0.1.evil.example"])
async def test_without_a_token_a_foreign_host_is_refused(host: str) -> None:
    """A page that DNS-rebinds its name to 127.0.0.1 posts as its own origin, a text/plain body
    needing no preflight: only the bound host or a loopback name is answered (review H129)."""
    cfg = settings()
    async with client(cfg) as http:
        r = await http.post(
            "/decode",
            content=await sealed_body(cfg, "Alice's passport is X1234567"),
            headers={"host": host, "origin": f"http://{host}", "content-type": "text/plain"},
        )
        assert r.status_code == 421 and b"X1234567" not in r.content
        for loopback in ("localhost:8081", "[::1]:8081"):
            ok = await http.post(
                "/decode", content=await sealed_body(cfg, "x"), headers={"host": loopback}
            )
            assert ok.status_code == 200


async def test_without_a_token_the_bind_host_and_the_listed_names_are_answered() -> None:
    """`--bind 10.1.2.3:8081` answers requests addressed there, and a remote UI's name for the
    server is listed in MNEMOS_CODEC__SERVER_HOSTS (review H136)."""
    cfg = settings(server_bind="10.1.2.3:8081", server_hosts=("codec.internal.example",))
    async with client(cfg) as http:
        for host in ("10.1.2.3:8081", "codec.internal.example", "CODEC.internal.example:443"):
            r = await http.post(
                "/decode", content=await sealed_body(cfg, "x"), headers={"host": host}
            )
            assert r.status_code == 200, host
        other = await http.post(
            "/decode", content=await sealed_body(cfg, "x"), headers={"host": "10.9.9.9:8081"}
        )
        assert other.status_code == 421


def serve(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[Result, dict[str, object]]:
    """`mnemos codec-server *args` with a key set, and what it handed uvicorn.run (if it got there)."""
    served: dict[str, object] = {}

    def run(app: object, **kw: object) -> None:
        served.update(app=app, **kw)

    monkeypatch.setenv("MNEMOS_CODEC__KEY", base64.b64encode(os.urandom(32)).decode())
    monkeypatch.setattr(uvicorn, "run", run)
    get_settings.cache_clear()
    app = typer.Typer()
    app.command()(codec_server)
    result = CliRunner().invoke(app, list(args))
    get_settings.cache_clear()
    return result, served


@pytest.mark.parametrize(
    ("bind", "host", "port"),
    [("10.1.2.3:8081", "10.1.2.3", 8081), ("[fd00::5]:8081", "fd00::5", 8081)],
)
def test_the_command_answers_the_address_bind_names(
    monkeypatch: pytest.MonkeyPatch, bind: str, host: str, port: int
) -> None:
    """An IPv6 bind is written [address]:port, as in a URL; uvicorn gets it without the brackets
    and the Host header of that URL is answered (review H145)."""
    result, served = serve(monkeypatch, "--bind", bind)
    assert result.exit_code == 0, result.output
    assert (served["host"], served["port"]) == (host, port)
    assert f"http://{bind} " in result.output
    probe = TestClient(cast(FastAPI, served["app"]))
    assert probe.post("/decode", content=b"{}", headers={"host": bind}).status_code == 200


@pytest.mark.parametrize(
    ("bind", "says"),
    [
        ("fd00::5:8081", "[IPv6]:port"),  # is 8081 the port or the last group of the address?
        ("::1:8081", "[IPv6]:port"),
        (":8081", "host:port"),
        ("10.1.2.3", "host:port"),
        ("10.1.2.3:99999", "1-65535"),
    ],
)
def test_a_bind_that_is_not_host_and_port_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, bind: str, says: str
) -> None:
    """An unbracketed IPv6 bind is ambiguous and one without a host once let any unparsable Host
    header in; neither starts a server, and the error names the form to use (review H145)."""
    result, served = serve(monkeypatch, "--bind", bind)
    assert result.exit_code == 2 and not served
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert says in result.output and "--bind" in result.output


@pytest.mark.parametrize(
    ("name", "value", "named"),
    [
        ("MNEMOS_CODEC__SERVER_BIND", "fd00::5:8081", "'fd00::5:8081'"),
        (
            "MNEMOS_CODEC__SERVER_HOSTS",
            '["https://temporal-ui.example.com"]',
            "'https://temporal-ui.example.com'",
        ),
    ],
)
def test_a_codec_server_setting_does_not_stop_the_other_processes(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, named: str
) -> None:
    """The worker, serve and every CLI command load the settings too: a bind or a listed host
    only codec-server reads must not stop them (in a rolling upgrade with a shared environment
    the new workers would crash-loop); codec-server alone refuses it, naming it (review H161)."""
    monkeypatch.setenv(name, value)
    read_settings()
    result, served = serve(monkeypatch)
    assert result.exit_code == 1 and not served  # a setting's error: one line (README, CLI)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert name in result.output and named in result.output, result.output


@pytest.mark.parametrize(
    ("listed", "host"),
    [
        ("codec.internal.example:8081", "codec.internal.example:8081"),
        ("Codec.Internal.Example", "codec.internal.example"),
        ("[fd00::5]", "[fd00::5]:8081"),
        ("[fd00::5]:8081", "[fd00:0:0::5]"),
        ("fd00::5", "[FD00::5]:8081"),
    ],
)
async def test_a_listed_host_is_read_as_a_host_header(listed: str, host: str) -> None:
    """MNEMOS_CODEC__SERVER_HOSTS takes the name as a Host header writes it, port or brackets
    included; a remote UI calling it so is answered (review H145)."""
    cfg = settings(server_hosts=(listed,))
    async with client(cfg) as http:
        r = await http.post("/decode", content=await sealed_body(cfg, "x"), headers={"host": host})
    assert r.status_code == 200


@pytest.mark.parametrize("listed", ["http://codec.internal.example", "[fd00::5", "", "a b"])
def test_a_listed_host_that_is_no_host_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, listed: str
) -> None:
    """codec-server names the entry rather than never matching it; a mounted codec_app too."""
    monkeypatch.setenv("MNEMOS_CODEC__SERVER_HOSTS", json.dumps([listed]))
    result, served = serve(monkeypatch)
    assert result.exit_code == 1 and not served
    assert "is not a host" in result.output and "MNEMOS_CODEC__SERVER_HOSTS" in result.output
    with pytest.raises(ValueError, match="is not a host"):
        codec_app(settings(server_hosts=(listed,)))


@pytest.mark.parametrize("host", ["[evil", "", "evil.example@127.0.0.1", "localhost/x", "[::1"])
async def test_without_a_token_a_host_header_that_does_not_parse_is_refused(host: str) -> None:
    """A Host header is answered only if it parses to an answered host: one that does not is
    refused, never read as a loopback name or as no host at all (review H145)."""
    cfg = settings()
    async with client(cfg) as http:
        r = await http.post("/decode", content=await sealed_body(cfg, "x"), headers={"host": host})
    assert r.status_code == 421


def test_no_key_is_one_error_line_and_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """README's CLI contract: a setting's error is one `error: …` line and exit code 1, not a
    usage box and exit 2 (found by H171)."""
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: pytest.fail("served without a key"))
    monkeypatch.delenv("MNEMOS_CODEC__KEY", raising=False)
    get_settings.cache_clear()
    app = typer.Typer()
    app.command()(codec_server)
    result = CliRunner().invoke(app, [])
    get_settings.cache_clear()
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "error: no codec key configured (MNEMOS_CODEC__KEY): nothing to decode"
    ]
